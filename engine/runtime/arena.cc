#include "engine/runtime/arena.h"

#include <algorithm>
#include <exception>
#include <string>

#include "engine/core/error.h"
#include "engine/plan/memory_overlaps.h"
#include "engine/plan/slot_alignment.h"
#include "engine/runtime/plan_tensors.h"

namespace twinflow::runtime {
namespace {

constexpr int32_t kMaxSlots = 1 << 16;

}  // namespace

Arena::Arena(const plan::Plan& plan, int device, Device& bytes_from) : device_(device) {
  const std::string where = "device " + std::to_string(device);
  const plan::MemoryPlan* memory = nullptr;
  for (const plan::MemoryPlan& m : plan.memory()) {
    if (m.device() == device) memory = &m;
  }
  if (memory && memory->arena_bytes() < 0) throw PlanError(where + ": negative arena size");
  bytes_ = memory ? memory->arena_bytes() : 0;

  regsts_.resize(plan.regsts_size());
  for (const plan::Regst& r : plan.regsts()) {
    const int64_t producer = r.producer();
    if (producer < 0 || producer >= plan.tasks_size()) {
      throw PlanError(RegstName(plan, r.id()) + ": producer out of range");
    }
    if (plan.tasks(static_cast<int>(producer)).device() != device) continue;
    const std::string name = RegstName(plan, r.id());
    if (r.id() < 0 || r.id() >= plan.regsts_size() || &plan.regsts(r.id()) != &r) {
      throw PlanError(name + ": id does not match its index");
    }
    if (r.slots() < 1 || r.slots() > kMaxSlots) {
      throw PlanError(name + ": " + std::to_string(r.slots()) + " slots");
    }
    Layout& layout = regsts_[r.id()];
    layout.held = true;
    layout.consumers = r.consumers_size();
    layout.offsets.assign(r.slots(), -1);
    layout.outstanding.assign(r.slots(), 0);
    layout.live.assign(r.slots(), false);
    if (IsDataRegst(r)) {
      layout.shape = ToShape(r.tensor(), name);
      layout.dtype = ToDType(r.tensor().dtype(), name);
      layout.slot_bytes = layout.shape.numel() * DTypeSize(layout.dtype);
    }
    if (r.bytes_per_slot() != layout.slot_bytes) {
      throw PlanError(name + ": " + std::to_string(r.bytes_per_slot()) +
                      " bytes per slot, but its tensor needs " + std::to_string(layout.slot_bytes));
    }
  }
  if (memory) {
    for (const plan::SlotOffset& o : memory->offsets()) {
      const std::string name = RegstName(plan, o.regst());
      if (o.regst() < 0 || o.regst() >= plan.regsts_size() || !regsts_[o.regst()].held) {
        throw PlanError(where + ": memory plan places " + name + ", not produced there");
      }
      Layout& layout = regsts_[o.regst()];
      if (o.slot() < 0 || o.slot() >= static_cast<int>(layout.offsets.size())) {
        throw PlanError(where + ": memory plan places slot " + std::to_string(o.slot()) + " of " +
                        name + ", which has no such slot");
      }
      if (o.offset() < 0 || o.offset() > bytes_ || layout.slot_bytes > bytes_ - o.offset()) {
        throw PlanError(where + ": slot " + std::to_string(o.slot()) + " of " + name +
                        " at offset " + std::to_string(o.offset()) + " does not fit the arena of " +
                        std::to_string(bytes_) + " bytes");
      }
      // The compiler aligns every slot; a GPU faults on (and cuBLASLt refuses) misaligned data,
      // so a hand-written Plan must align there too.
      if (bytes_from.type() != DeviceType::kCpu && o.offset() % plan::kSlotAlignment != 0) {
        throw PlanError(where + ": slot " + std::to_string(o.slot()) + " of " + name +
                        " at offset " + std::to_string(o.offset()) + " is not " +
                        std::to_string(plan::kSlotAlignment) + "-byte aligned");
      }
      layout.offsets[o.slot()] = o.offset();
    }
  }
  for (size_t id = 0; id < regsts_.size(); ++id) {
    Layout& layout = regsts_[id];
    for (size_t s = 0; s < layout.offsets.size(); ++s) {
      if (layout.offsets[s] >= 0) continue;
      if (layout.slot_bytes > 0) {
        throw PlanError(where + ": memory plan has no offset for slot " + std::to_string(s) +
                        " of " + RegstName(plan, static_cast<int64_t>(id)));
      }
      layout.offsets[s] = 0;  // a control register or an empty tensor owns no bytes
    }
  }
  FindSharedBytes(plan, memory);
  FindInPlacePairs(plan);
  base_ = bytes_from.AllocateArena(bytes_);
}

void Arena::FindSharedBytes(const plan::Plan& plan, const plan::MemoryPlan* memory) {
  for (Layout& layout : regsts_) layout.sharing.assign(layout.offsets.size(), {});
  if (memory == nullptr) return;
  for (const auto& [a, b] : plan::OverlappingSlots(plan, *memory)) {
    regsts_[a.regst].sharing[a.slot].push_back({b.regst, b.slot});
    regsts_[b.regst].sharing[b.slot].push_back({a.regst, a.slot});
  }
}

void Arena::FindInPlacePairs(const plan::Plan& plan) {
  for (const plan::Task& t : plan.tasks()) {
    if (t.device() != device_) continue;
    for (const auto& [i, o] : plan::InPlaceRegsts(plan, t)) {
      if (!Holds(i) || !Holds(o)) continue;
      Layout& in = regsts_[i];
      Layout& out = regsts_[o];
      if (in.offsets != out.offsets || in.slot_bytes == 0) continue;  // not one buffer after all
      in.bytes_live_on = true;
      out.bytes_already_in = true;
    }
  }
  for (const plan::Task& t : plan.tasks()) {
    const auto io = plan::RepeatInPlaceRegsts(plan, t);
    if (t.device() != device_ || !io || !Holds(io->first) || !Holds(io->second)) continue;
    const Layout& in = regsts_[io->first];
    Layout& out = regsts_[io->second];
    if (in.offsets.size() != 1 || in.slot_bytes == 0) continue;
    bool aliased = true;
    for (int64_t offset : out.offsets) aliased = aliased && offset == in.offsets[0];
    if (!aliased) continue;  // not one buffer after all
    out.bytes_already_in = true;
    out.bytes_borrowed = true;
  }
}

void Arena::CheckNoneLive(int64_t regst, int32_t slot) const {
  for (const auto& [other, other_slot] : regsts_[regst].sharing[slot]) {
    if (!regsts_[other].live[other_slot]) continue;
    throw PlanError("device " + std::to_string(device_) + ": memory plan puts slot " +
                    std::to_string(slot) + " of regst " + std::to_string(regst) + " and slot " +
                    std::to_string(other_slot) + " of regst " + std::to_string(other) +
                    " in the same bytes, and both are live");
  }
}

bool Arena::Holds(int64_t regst) const {
  return regst >= 0 && regst < static_cast<int64_t>(regsts_.size()) && regsts_[regst].held;
}

Arena::Layout& Arena::At(int64_t regst, int32_t slot) {
  if (!Holds(regst) || slot < 0 || slot >= static_cast<int>(regsts_[regst].offsets.size())) {
    throw PlanError("device " + std::to_string(device_) + " holds no slot " + std::to_string(slot) +
                    " of regst " + std::to_string(regst));
  }
  return regsts_[regst];
}

Tensor Arena::View(int64_t regst, int32_t slot) {
  Layout& layout = At(regst, slot);
  return Tensor::View(layout.shape, layout.dtype, base_ + layout.offsets[slot]);
}

void Arena::Pin(int64_t regst) {
  Layout& layout = At(regst, 0);
  if (layout.pinned) return;
  layout.pinned = true;
  for (size_t s = 0; s < layout.live.size(); ++s) {
    if (!layout.live[s]) {
      CheckNoneLive(regst, static_cast<int32_t>(s));
      live_bytes_ += layout.slot_bytes;
      if (layout.slot_bytes > 0) {
        high_water_ = std::max(high_water_, layout.offsets[s] + layout.slot_bytes);
      }
    }
    layout.live[s] = true;
  }
  if (live_bytes_ > peak_bytes_) peak_bytes_ = live_bytes_;
}

void Arena::ResetLiveness() {
  live_bytes_ = 0;
  for (Layout& layout : regsts_) {
    for (size_t s = 0; s < layout.live.size(); ++s) {
      layout.live[s] = layout.pinned;
      layout.outstanding[s] = 0;
      if (layout.pinned) live_bytes_ += layout.slot_bytes;
    }
  }
  peak_bytes_ = live_bytes_;
  high_water_ = 0;
  for (const Layout& layout : regsts_) {
    if (!layout.pinned || layout.slot_bytes == 0) continue;
    for (int64_t offset : layout.offsets) {
      high_water_ = std::max(high_water_, offset + layout.slot_bytes);
    }
  }
}

void Arena::MarkLive(int64_t regst, int32_t slot) {
  Layout& layout = At(regst, slot);
  if (layout.live[slot]) return;  // an ACC keeps its output slot over several acts
  CheckNoneLive(regst, slot);
  layout.live[slot] = true;
  if (layout.slot_bytes > 0) {
    high_water_ = std::max(high_water_, layout.offsets[slot] + layout.slot_bytes);
  }
  layout.outstanding[slot] = layout.consumers;
  if (layout.bytes_already_in) return;
  live_bytes_ += layout.slot_bytes;
  if (live_bytes_ > peak_bytes_) peak_bytes_ = live_bytes_;
}

void Arena::Release(int64_t regst, int32_t slot) {
  Layout& layout = At(regst, slot);
  if (layout.pinned || !layout.live[slot]) return;
  if (--layout.outstanding[slot] > 0) return;
  layout.live[slot] = false;
  if (!layout.bytes_live_on && !layout.bytes_borrowed) live_bytes_ -= layout.slot_bytes;
}

}  // namespace twinflow::runtime
