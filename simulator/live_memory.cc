#include "simulator/live_memory.h"

#include <algorithm>

#include "engine/plan/memory_overlaps.h"

namespace twinflow::sim {

LiveMemory::LiveMemory(const plan::Plan& plan, bool record)
    : plan_(plan), record_(record), live_(plan.devices_size(), 0), peak_(plan.devices_size(), 0) {
  for (const plan::Regst& r : plan.regsts()) outstanding_.emplace_back(r.slots(), kFree);
  in_place_input_.assign(plan.regsts_size(), false);
  in_place_output_.assign(plan.regsts_size(), false);
  borrowed_.assign(plan.regsts_size(), false);
  for (const plan::Task& t : plan.tasks()) {
    for (const auto& [in, out] : plan::InPlaceRegsts(plan, t)) {
      in_place_input_[in] = true;
      in_place_output_[out] = true;
    }
    if (const auto io = plan::RepeatInPlaceRegsts(plan, t)) borrowed_[io->second] = true;
  }
}

void LiveMemory::Launched(const runtime::Launch& launch, Nanos now) {
  const plan::Task& t = plan_.tasks(static_cast<int>(launch.task));
  for (const runtime::SlotRef& o : launch.outputs) {
    int& outstanding = outstanding_[o.regst][o.slot];
    if (outstanding != kFree) continue;  // an ACC keeps its output over several acts
    const plan::Regst& r = plan_.regsts(static_cast<int>(o.regst));
    outstanding = t.kind() == plan::VARIABLE ? kPinned : r.consumers_size();
    if (!in_place_output_[o.regst] && !borrowed_[o.regst])
      Change(t.device(), r.bytes_per_slot(), now);
  }
}

void LiveMemory::Returned(const runtime::RegstFree& free, Nanos now) {
  int& outstanding = outstanding_[free.regst][free.slot];
  if (outstanding == kFree || outstanding == kPinned || --outstanding > 0) return;
  outstanding = kFree;
  if (in_place_input_[free.regst] || borrowed_[free.regst]) return;  // counted as the input
  const plan::Regst& r = plan_.regsts(static_cast<int>(free.regst));
  Change(plan_.tasks(static_cast<int>(r.producer())).device(), -r.bytes_per_slot(), now);
}

void LiveMemory::Change(int device, int64_t bytes, Nanos now) {
  if (bytes == 0) return;
  live_[device] += bytes;
  peak_[device] = std::max(peak_[device], live_[device]);
  if (record_) samples_.push_back({device, now, live_[device]});
}

}  // namespace twinflow::sim
