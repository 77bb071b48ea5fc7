#pragma once
// LiveMemory: the bytes of register slots live on each device as the simulation runs, counted
// as the runtime's arena does: a slot is live from its producer's launch until every consumer
// returned it; a VARIABLE's slot for good. Its peak is checked against the memory plan's
// (tests), and its changes are the trace's memory counters.
#include <cstdint>
#include <vector>

#include "engine/plan/plan.pb.h"
#include "engine/plan/trace_record.h"
#include "engine/runtime/actor.h"
#include "simulator/des/event_queue.h"

namespace twinflow::sim {

// Lifetime: keeps `plan` by reference; it must outlive this (one Simulation's member).
class LiveMemory {
 public:
  // `record`: keep every change as a trace sample.
  LiveMemory(const plan::Plan& plan, bool record);

  void Launched(const runtime::Launch& launch, Nanos now);
  void Returned(const runtime::RegstFree& free, Nanos now);

  int64_t peak(int device) const { return peak_[device]; }
  const std::vector<plan::MemorySample>& samples() const { return samples_; }

 private:
  void Change(int device, int64_t bytes, Nanos now);

  static constexpr int kFree = -1;
  static constexpr int kPinned = -2;
  const plan::Plan& plan_;
  bool record_;
  std::vector<std::vector<int>> outstanding_;  // by regst and slot: consumers yet to return it
  // By regst: an in-place all_reduce's input or output, whose bytes are one slot counted once:
  // from the input's producer until the output's last reader returns it.
  std::vector<bool> in_place_input_, in_place_output_;
  std::vector<bool> borrowed_;  // an in-place REPEAT's output: its input's bytes, never counted
  std::vector<int64_t> live_, peak_;  // by plan device
  std::vector<plan::MemorySample> samples_;
};

}  // namespace twinflow::sim
