#pragma once
// Arena: the memory of one device, allocated exactly as the Plan's memory plan says. Every
// slot of every register produced on the device sits at its planned offset; kernels work on
// views of the slots. The arena also measures liveness: a slot is live from its producer's
// launch into it until every consumer has returned it (variables' slots are live for good),
// and the most live bytes seen is the device's measured peak, comparable with the plan's
// peak_bytes; the highest byte a live slot reached is its high-water mark, comparable with the
// plan's arena_bytes. Slots the plan puts in shared bytes must never be live together: the
// arena checks it each time a slot comes alive and fails with PlanError naming both.
//
// Threads: slot bytes may be read by any device thread once the slot was announced; the
// liveness counters belong to the device's own thread (launches and RegstFree messages of the
// registers it produces both happen there).
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/plan/plan.pb.h"
#include "engine/runtime/device.h"

namespace twinflow::runtime {

class Arena {
 public:
  // PlanError when a slot has no offset or does not fit; OutOfMemoryError when the arena
  // cannot be allocated. The bytes come from `bytes_from`, which must outlive the arena.
  Arena(const plan::Plan& plan, int device, Device& bytes_from);
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  int device() const { return device_; }
  int64_t bytes() const { return bytes_; }
  bool Holds(int64_t regst) const;
  // A view of the slot with the register's shape and dtype (PlanError when out of range).
  Tensor View(int64_t regst, int32_t slot);

  void Pin(int64_t regst);                     // all its slots live for good
  void MarkLive(int64_t regst, int32_t slot);  // its producer launched into it
  void Release(int64_t regst, int32_t slot);   // one consumer returned it
  // A new run: every slot but the pinned ones is free, and the peak restarts.
  void ResetLiveness();
  int64_t live_bytes() const { return live_bytes_; }
  int64_t peak_bytes() const { return peak_bytes_; }
  int64_t high_water() const { return high_water_; }

 private:
  struct Layout {
    bool held = false;
    bool pinned = false;
    Shape shape;
    DType dtype = DType::kF32;
    int64_t slot_bytes = 0;
    int consumers = 0;
    std::vector<int64_t> offsets;  // per slot
    std::vector<int> outstanding;  // consumers yet to return each live slot
    std::vector<bool> live;
    std::vector<std::vector<std::pair<int64_t, int32_t>>> sharing;  // per slot
    // An in-place all_reduce's input and output at the same bytes count once: from the input's
    // launch until the output is released. An in-place REPEAT's output never counts: its bytes
    // are its input's, which the REPEAT holds until the output comes back.
    bool bytes_live_on = false;     // the all_reduce's input: its bytes become the output's
    bool bytes_already_in = false;  // the output of either: its bytes are the input's
    bool bytes_borrowed = false;    // the REPEAT's output: releasing it frees nothing
  };
  Layout& At(int64_t regst, int32_t slot);
  // Per slot, the other slots whose bytes overlap its own (found once, from the offsets; none
  // without a memory plan).
  void FindSharedBytes(const plan::Plan& plan, const plan::MemoryPlan* memory);
  void CheckNoneLive(int64_t regst, int32_t slot) const;
  void FindInPlacePairs(const plan::Plan& plan);

  int device_;
  int64_t bytes_ = 0;
  std::vector<Layout> regsts_;  // by register id; held only for this device's registers
  std::byte* base_ = nullptr;   // from the Device, aligned
  int64_t live_bytes_ = 0;
  int64_t peak_bytes_ = 0;
  int64_t high_water_ = 0;
};

}  // namespace twinflow::runtime
