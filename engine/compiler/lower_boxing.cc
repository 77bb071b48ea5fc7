// Lowering of boxing steps: each step of a BoxingPlan becomes one task per destination
// device, a COLLECTIVE (grouped by comm group and issue order) or a COPY of regions.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/compiler/lower_internal.h"
#include "engine/core/collective_kind.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/sbp/slicing.h"

namespace twinflow::compiler::lowering {

std::vector<int64_t> Lowerer::LowerStep(const graph::TensorNode& node, const sbp::BoxingStep& step,
                                        const std::vector<int64_t>& current, size_t index) {
  const std::string name =
      node.name + "/boxing" + std::to_string(index) + "_" + sbp::BoxingStepKindName(step.kind);
  std::vector<int64_t> next(step.to.placement.size(), -1);
  const StepOutput output = [&](plan::Task& task, int64_t j) {
    CheckSymmetricShard(node.meta.shape, step.to, j);
    next[j] = NewRegst(task, sbp::PhysicalShape(node.meta.shape, step.to, j), node.meta.dtype);
  };
  switch (step.kind) {
    case sbp::BoxingStepKind::kAllGather:
    case sbp::BoxingStepKind::kAllReduce:
    case sbp::BoxingStepKind::kReduceScatter:
    case sbp::BoxingStepKind::kAllToAll:
      LowerCollectiveStep(step, current, name, output);
      return next;
    case sbp::BoxingStepKind::kLocalSlice:
      LowerLocalSliceStep(node, step, current, name, output);
      return next;
    case sbp::BoxingStepKind::kSendRecv:
    case sbp::BoxingStepKind::kBroadcast:
      LowerCopyStep(node, step, current, name, output);
      return next;
  }
  throw PlanError("boxing step of unknown kind for tensor '" + node.name + "'");
}

void Lowerer::LowerCollectiveStep(const sbp::BoxingStep& step, const std::vector<int64_t>& current,
                                  const std::string& name, const StepOutput& output) {
  const Placement& to = step.to.placement;
  for (const std::vector<int64_t>& all : step.groups) {
    const std::vector<int64_t> members = StoredMembers(step.from.placement, all);
    if (members.empty()) continue;  // folded: an image of a group of copy 0
    const int64_t group = GroupOf(step.from.placement, members, members.size() < all.size());
    std::vector<int64_t> inputs;
    for (int64_t j : members) inputs.push_back(current[j]);
    const std::optional<BucketKey> key = BucketKeyOf(step, group, inputs);
    const auto open = key ? buckets_.find(*key) : buckets_.end();
    if (open != buckets_.end()) {  // SplitBuckets cuts it by the cap once every gradient joined
      JoinBucket(open->second, name, members, current, output);
      continue;
    }
    const int64_t order = next_issue_order_++;
    std::vector<int64_t> tasks;
    for (size_t m = 0; m < members.size(); ++m) {
      const int64_t j = members[m];
      plan::Task& task = NewTask(plan::COLLECTIVE, DeviceOf(to.device(j)),
                                 name + "@" + std::to_string(to.device(j).index));
      plan::CollectiveDesc* c = task.mutable_collective();
      const CollectiveKind kind = *sbp::StepCollective(step.kind);
      c->set_kind(plan::ToProto(kind));
      c->set_reduce_op(CollectiveReduces(kind) ? plan::ToProto(step.reduce_op) : plan::REDUCE_NONE);
      c->set_gather_axis(std::max(step.gather_axis, 0));  // unused axes stay 0
      c->set_scatter_axis(std::max(step.scatter_axis, 0));
      c->set_group(group);
      c->set_member(static_cast<int32_t>(m));
      task.set_issue_order(order);
      Consume(task, current[j]);
      output(task, j);
      tasks.push_back(task.id());
    }
    if (key) buckets_[*key] = {tasks, {name}};
  }
}

void Lowerer::LowerLocalSliceStep(const graph::TensorNode& node, const sbp::BoxingStep& step,
                                  const std::vector<int64_t>& current, const std::string& name,
                                  const StepOutput& output) {
  const Shape& shape = node.meta.shape;
  const Placement& to = step.to.placement;
  const int a = step.mesh_axis;
  const int64_t p = to.hierarchy()[a];
  const sbp::Sbp& x = step.from.nd_sbp[a];
  const sbp::Sbp& y = step.to.nd_sbp[a];
  for (int64_t j = 0; j < to.size(); ++j) {
    if (!Stored(to, j)) continue;  // folded: an image of copy 0's
    plan::Task& task = NewTask(plan::COPY, DeviceOf(to.device(j)),
                               name + "@" + std::to_string(to.device(j).index));
    Consume(task, current[j]);
    const Region rs = sbp::PhysicalRegion(shape, step.from, j);
    const Region rd = sbp::PhysicalRegion(shape, step.to, j);
    // B -> P(sum) keeps the value on coordinate 0 of the axis and zeroes the others.
    const bool zero = p > 1 && x.is_broadcast() && y.is_partial() && y.op == ReduceOp::kSum &&
                      to.MeshCoord(j)[a] != 0;
    if (!zero) AddTransfer(task, current[j], rs, rd, rs.Intersect(rd), node.meta.dtype);
    output(task, j);
  }
}

void Lowerer::LowerCopyStep(const graph::TensorNode& node, const sbp::BoxingStep& step,
                            const std::vector<int64_t>& current, const std::string& name,
                            const StepOutput& output) {
  const Shape& shape = node.meta.shape;
  const Placement& to = step.to.placement;
  // Each stored destination's transfers, pointing into the step (or `broadcast`): copying a
  // thousand devices' transfers for the few a folded Plan keeps cost more than lowering them.
  std::vector<std::vector<const sbp::RegionTransfer*>> by_destination(to.size());
  std::vector<sbp::RegionTransfer> broadcast;
  if (step.kind == sbp::BoxingStepKind::kBroadcast) {
    // One root sends to every copy: the copies do not send alike.
    if (fold_.folded()) throw FoldError("'" + node.name + "' is broadcast from one device");
    for (int64_t j = 0; j < to.size(); ++j)
      broadcast.push_back({step.root, j, Region::Full(shape), 0});
    for (const sbp::RegionTransfer& t : broadcast) by_destination[t.dst_index].push_back(&t);
  } else {
    for (const sbp::RegionTransfer& t : step.transfers) {
      if (Stored(to, t.dst_index)) by_destination[t.dst_index].push_back(&t);
    }
  }
  for (int64_t j = 0; j < to.size(); ++j) {
    if (!Stored(to, j)) continue;  // folded: an image of copy 0's
    plan::Task& task = NewTask(plan::COPY, DeviceOf(to.device(j)),
                               name + "@" + std::to_string(to.device(j).index));
    const Region rd = sbp::PhysicalRegion(shape, step.to, j);
    // Folded, a source in another copy is read as its image in copy 0 (Transfer.src_copy).
    const auto source = [&](int64_t src_index) {
      return InCopyZero(step.from.placement, src_index);
    };
    std::vector<int64_t> sources;
    for (const sbp::RegionTransfer* t : by_destination[j]) {
      const int64_t regst = current[source(t->src_index).first];
      if (std::find(sources.begin(), sources.end(), regst) == sources.end()) {
        sources.push_back(regst);
      }
    }
    // A destination that receives nothing (an empty slice) still waits for the piece.
    if (sources.empty()) {
      sources.push_back(current[source(std::min<int64_t>(j, current.size() - 1)).first]);
    }
    for (int64_t regst : sources) Consume(task, regst);
    for (const sbp::RegionTransfer* t : by_destination[j]) {
      const auto [src, copy] = source(t->src_index);
      AddTransfer(task, current[src], sbp::PhysicalRegion(shape, step.from, t->src_index), rd,
                  t->region, node.meta.dtype, copy);
    }
    output(task, j);
  }
}

void Lowerer::AddTransfer(plan::Task& task, int64_t src_regst, const Region& src_region,
                          const Region& dst_region, const Region& region, DType dtype,
                          int32_t src_copy) {
  if (region.empty()) return;
  plan::Transfer* t = task.add_transfers();
  t->set_src_regst(src_regst);
  t->set_src_copy(src_copy);
  *t->mutable_src_region() = Desc(src_region);
  *t->mutable_dst_region() = Desc(dst_region);
  *t->mutable_region() = Desc(region);
  task.set_bytes_moved(task.bytes_moved() + region.numel() * DTypeSize(dtype));
}

int64_t Lowerer::GroupOf(const Placement& placement, const std::vector<int64_t>& members,
                         bool spans_copies) {
  std::vector<int32_t> devices;
  for (int64_t m : members) devices.push_back(DeviceOf(placement.device(m)));
  // A group of copy 0 alone and one spanning the copies never share an id.
  if (spans_copies) devices.push_back(-1);
  const auto it = groups_.find(devices);
  if (it != groups_.end()) return it->second;
  plan::CommGroup* group = plan_.add_groups();
  group->set_id(plan_.groups_size() - 1);
  for (int32_t d : devices) {
    if (d >= 0) group->add_devices(d);
  }
  group->set_spans_copies(spans_copies);
  return groups_[devices] = group->id();
}

}  // namespace twinflow::compiler::lowering
