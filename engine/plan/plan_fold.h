#pragma once
// Device arithmetic of folded Plans (plan.proto PlanFold): a data-parallel symmetry whose copy 0
// alone is lowered, planned and simulated. Device indices are the placements' global ids
// (Device.index); pipeline stages occupy blocks of `block` devices, and within a block the
// copies follow each other every `stride` devices.
#include <cstdint>

#include "engine/plan/plan.pb.h"

namespace twinflow::plan {

struct DeviceFold {
  int copies = 1;  // 1: not folded
  int64_t stride = 0;
  int64_t block = 0;

  static DeviceFold Of(const Plan& plan) {
    const PlanFold& f = plan.fold();
    return f.copies() > 1 ? DeviceFold{f.copies(), f.stride(), f.block()} : DeviceFold{};
  }
  bool folded() const { return copies > 1; }
  // Copy 0 holds device `index` (every device when not folded).
  bool Stored(int64_t index) const { return !folded() || index % block < stride; }
  // Device `index`'s image in copy `copy`; `index` in copy 0.
  int64_t Image(int64_t index, int copy) const { return index + copy * stride; }
  // The copy-0 device whose image `index` is.
  int64_t Canonical(int64_t index) const {
    return folded() ? index / block * block + index % block % stride : index;
  }
};

// Whether `consumer` reads register `regst` in another copy (a transfer with src_copy != 0):
// then another copy's device, not its own, reads the copy-0 register, and passes that reason
// about who reads a register on which device (task chains, slot counts) must count the read
// as remote. `only`: every transfer from `regst` is such (else: any).
inline bool ReadsOtherCopies(const Task& consumer, int64_t regst, bool only) {
  bool any = false, all = true, reads = false;
  for (const Transfer& t : consumer.transfers()) {
    if (t.src_regst() != regst) continue;
    reads = true;
    any = any || t.src_copy() != 0;
    all = all && t.src_copy() != 0;
  }
  return only ? reads && all : any;
}

}  // namespace twinflow::plan
