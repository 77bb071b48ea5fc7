// Memory plans: one per device, every slot of every register placed once inside its arena.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_validate_internal.h"
#include "engine/plan/slot_alignment.h"

namespace twinflow::plan::validation {

// A slot must start where its dtype may be loaded from (UBSan caught a misaligned float in an
// optimizer kernel of a mutated Plan), and at kSlotAlignment on accelerators.
void Validator::CheckAligned(int64_t device, const SlotOffset& s) const {
  const Regst& regst = plan_.regsts(s.regst());
  if (IsControl(s.regst())) return;
  const auto what = [&] { return RegstText(s.regst()) + " slot " + Str(s.slot()); };
  const int64_t dtype_bytes = DTypeSize(FromProto(regst.tensor().dtype(), what()));
  const bool cpu = plan_.devices(static_cast<int>(device)).type() == DEVICE_CPU;
  const int64_t alignment = cpu ? dtype_bytes : std::max(dtype_bytes, kSlotAlignment);
  if (s.offset() % alignment != 0) {
    Fail("memory plan of device " + Str(device) + " places " + what() + " at offset " +
         Str(s.offset()) + ", not a multiple of " + Str(alignment) + " bytes" +
         (cpu ? " (its dtype's size)" : " (the accelerator's slot alignment)"));
  }
}

void Validator::CheckMemory() const {
  if (plan_.memory_size() != NumDevices()) {
    Fail("the plan has " + Str(plan_.memory_size()) + " memory plans for " + Str(NumDevices()) +
         " devices (expected one per device)");
  }
  std::vector<bool> planned(NumDevices(), false);
  std::vector<int64_t> offsets_of(plan_.regsts_size(), 0);
  for (const MemoryPlan& memory : plan_.memory()) {
    const int64_t d = memory.device();
    if (d < 0 || d >= NumDevices() || planned[d]) {
      Fail("memory plan for device " + Str(d) + " is for no device or a device planned twice");
    }
    planned[d] = true;
    const auto what = [&] { return "memory plan of device " + Str(d); };
    const int64_t arena = memory.arena_bytes();
    if (arena < 0 || arena > kMaxBytes) Fail(what() + " has arena of " + Str(arena) + " bytes");
    if (memory.peak_bytes() < 0 || memory.peak_bytes() > arena) {
      Fail(what() + " has peak " + Str(memory.peak_bytes()) + " bytes outside its arena of " +
           Str(arena));
    }
    std::set<std::pair<int64_t, int32_t>> seen;
    for (const SlotOffset& s : memory.offsets()) {
      if (s.regst() < 0 || s.regst() >= plan_.regsts_size()) {
        Fail(what() + " places regst " + Str(s.regst()) + ", which does not exist");
      }
      const Regst& regst = plan_.regsts(s.regst());
      const std::string slot = RegstText(s.regst()) + " slot " + Str(s.slot());
      if (plan_.tasks(regst.producer()).device() != d) {
        Fail(what() + " places " + slot + ", which is produced on device " +
             Str(plan_.tasks(regst.producer()).device()));
      }
      if (s.slot() < 0 || s.slot() >= regst.slots())
        Fail(what() + " places " + slot + ", beyond its slots");
      if (!seen.insert({s.regst(), s.slot()}).second) Fail(what() + " places " + slot + " twice");
      if (s.offset() < 0 || s.offset() > arena - regst.bytes_per_slot()) {
        Fail(what() + " places " + slot + " (" + Str(regst.bytes_per_slot()) +
             " bytes) at offset " + Str(s.offset()) + ", outside the arena of " + Str(arena) +
             " bytes");
      }
      CheckAligned(d, s);
      ++offsets_of[s.regst()];
    }
  }
  for (int64_t r = 0; r < plan_.regsts_size(); ++r) {
    if (offsets_of[r] != plan_.regsts(r).slots()) {
      Fail(RegstText(r) + " of " + TaskText(plan_.regsts(r).producer()) + " has offsets for " +
           Str(offsets_of[r]) + " of its " + Str(plan_.regsts(r).slots()) + " slots");
    }
  }
}

}  // namespace twinflow::plan::validation
