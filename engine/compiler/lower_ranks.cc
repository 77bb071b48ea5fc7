// Lowering across ranks: a COPY reads its sources' slots directly, which works between devices
// of one process only. For a source on another rank the COPY reads a RECV's register instead,
// filled by a SEND on the source's device with the bounding box of the regions the COPY needs.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/compiler/lower_internal.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"

namespace twinflow::compiler::lowering {
namespace {

Region ToRegion(const plan::RegionDesc& desc) {
  Region region;
  for (const plan::Range& r : desc.ranges()) region.ranges.push_back({r.begin(), r.end()});
  return region;
}

// The smallest region holding every transfer's region read from `regst`; empty (every range
// [b, b)) when the COPY reads none of it and only waits for its pieces.
Region BoundingBox(const plan::Task& copy, int64_t regst, const Region& source) {
  Region box;
  for (const plan::Transfer& t : copy.transfers()) {
    if (t.src_regst() != regst) continue;
    const Region r = ToRegion(t.region());
    if (box.ranges.empty()) {
      box = r;
      continue;
    }
    for (int a = 0; a < box.rank(); ++a) {
      box.ranges[a].begin = std::min(box.ranges[a].begin, r.ranges[a].begin);
      box.ranges[a].end = std::max(box.ranges[a].end, r.ranges[a].end);
    }
  }
  if (box.ranges.empty()) {
    for (const Range& r : source.ranges) box.ranges.push_back({r.begin, r.begin});
  }
  return box;
}

}  // namespace

int32_t Lowerer::RankOf(int32_t device) const { return plan_.devices(device).rank(); }

void Lowerer::SplitCrossRankReads() {
  const int tasks = plan_.tasks_size();  // the SENDs and RECVs made here need no splitting
  for (int t = 0; t < tasks; ++t) {
    if (plan_.tasks(t).kind() != plan::COPY) continue;
    const int32_t here = plan_.tasks(t).device();
    const std::vector<int64_t> consumed(plan_.tasks(t).consumed_regsts().begin(),
                                        plan_.tasks(t).consumed_regsts().end());
    for (int64_t x : consumed) {
      const int32_t there = plan_.tasks(static_cast<int>(plan_.regsts(x).producer())).device();
      if (RankOf(there) == RankOf(here)) continue;
      const plan::TensorDesc tensor = plan_.regsts(x).tensor();
      plan::RegionDesc source;  // the logical region x holds, from any transfer reading it
      bool known = false;
      for (const plan::Transfer& tr : plan_.tasks(t).transfers()) {
        if (tr.src_regst() == x) {
          source = tr.src_region();
          known = true;
        }
      }
      Region full;
      for (int64_t d : tensor.shape()) full.ranges.push_back({0, d});
      const Region box = BoundingBox(plan_.tasks(t), x, known ? ToRegion(source) : full);
      if (!known) source = Desc(full);
      const DType dtype = plan::FromProto(tensor.dtype(), "regst " + std::to_string(x));
      const int64_t tag = next_tag_++;
      const std::string name = plan_.tasks(t).name();
      current_rate_ = regst_rate_[x];
      current_pass_ = plan_.tasks(t).pass();
      current_stage_ = plan_.tasks(t).stage();
      source_stage_ = plan_.tasks(static_cast<int>(plan_.regsts(x).producer())).stage();

      plan::Task& send = NewTask(plan::SEND, there,
                                 name + "/send@" + std::to_string(plan_.devices(there).index()));
      Consume(send, x);
      send.set_peer(here);
      send.set_tag(tag);
      send.set_issue_order(tag);
      plan::Transfer* out = send.add_transfers();
      out->set_src_regst(x);
      *out->mutable_src_region() = source;
      *out->mutable_dst_region() = Desc(box);
      *out->mutable_region() = Desc(box);
      send.set_bytes_moved(box.numel() * DTypeSize(dtype));
      const int64_t send_id = send.id();

      plan::Task& recv =
          NewTask(plan::RECV, here, name + "/recv@" + std::to_string(plan_.devices(here).index()));
      recv.set_peer(there);
      recv.set_tag(tag);
      recv.set_issue_order(tag);
      *recv.add_transfers() = plan_.tasks(static_cast<int>(send_id)).transfers(0);
      recv.set_bytes_moved(box.numel() * DTypeSize(dtype));
      const int64_t y = NewRegst(recv, box.shape(), dtype);

      // The COPY now reads y, which holds `box`, in place of x.
      plan::Task& copy = *plan_.mutable_tasks(t);
      std::replace(copy.mutable_consumed_regsts()->begin(), copy.mutable_consumed_regsts()->end(),
                   x, y);
      plan_.mutable_regsts(y)->add_consumers(t);
      auto* consumers = plan_.mutable_regsts(x)->mutable_consumers();
      consumers->erase(std::remove(consumers->begin(), consumers->end(), int64_t{t}),
                       consumers->end());
      for (plan::Transfer& tr : *copy.mutable_transfers()) {
        if (tr.src_regst() != x) continue;
        tr.set_src_regst(y);
        *tr.mutable_src_region() = Desc(box);
      }
    }
  }
}

}  // namespace twinflow::compiler::lowering
