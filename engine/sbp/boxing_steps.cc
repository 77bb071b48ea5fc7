#include "engine/sbp/boxing_steps.h"

#include <algorithm>
#include <map>

#include "engine/sbp/slicing.h"

namespace twinflow::sbp {
namespace {

int64_t Bytes(const Region& region, DType dtype) { return region.numel() * DTypeSize(dtype); }

std::vector<DeviceId> DevicesOf(const Placement& placement, const std::vector<int64_t>& indices) {
  std::vector<DeviceId> devices;
  for (int64_t i : indices) devices.push_back(placement.device(i));
  return devices;
}

// A change of one mesh axis acts group by group along that axis only when no later mesh axis
// (of size > 1) interferes:
// - one that splits a tensor axis the change splits or joins: the group's pieces would not be
//   contiguous blocks of one region, so no single collective produces the new pieces;
// - one that is partial with another reduce op, when the change reduces: the value is the
//   outer reduction of the inner one, and max of sums is not sum of maxes.
bool GroupsAreIndependent(const Layout& layout, int axis, const Sbp& x, const Sbp& y) {
  const Shape& hierarchy = layout.placement.hierarchy();
  for (int b = axis + 1; b < hierarchy.rank(); ++b) {
    const Sbp& later = layout.nd_sbp[b];
    if (hierarchy[b] <= 1) continue;
    if (later.is_split() &&
        ((x.is_split() && x.axis == later.axis) || (y.is_split() && y.axis == later.axis))) {
      return false;
    }
    if (later.is_partial() && x.is_partial() && later.op != x.op) return false;
  }
  return true;
}

int64_t Overlap(const Range& a, const Range& b) {
  return std::max<int64_t>(0, std::min(a.end, b.end) - std::max(a.begin, b.begin));
}

// The most elements an all_to_all member m sends to another member r of `group`: the block
// from[m] ∩ to[r]. Within a group only the gather axis of the source slices and the scatter
// axis of the destination slices vary (the other mesh axes are fixed), so the block is
// a_m * b_r * c, and its largest over r != m needs only the two largest b: O(group), where
// every pair would be O(group^2) for a thousand-device all_to_all.
int64_t LargestAllToAllBlock(const std::vector<int64_t>& group, const std::vector<Region>& from,
                             const std::vector<Region>& to, int gather, int scatter) {
  const Region& from0 = from[group[0]];
  const Region& to0 = to[group[0]];
  int64_t common = 1;
  for (int k = 0; k < from0.rank(); ++k) {
    if (k != gather && k != scatter) common *= Overlap(from0.ranges[k], to0.ranges[k]);
  }
  // b of the two members receiving the most: (b, position in group).
  std::pair<int64_t, size_t> first{-1, 0}, second{-1, 0};
  for (size_t i = 0; i < group.size(); ++i) {
    const std::pair<int64_t, size_t> b{Overlap(from0.ranges[scatter], to[group[i]].ranges[scatter]),
                                       i};
    if (b.first > first.first) {
      second = first;
      first = b;
    } else if (b.first > second.first) {
      second = b;
    }
  }
  int64_t largest = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    const int64_t a = Overlap(from[group[i]].ranges[gather], to0.ranges[gather]);
    largest = std::max(largest, a * (i == first.second ? second.first : first.first));
  }
  return largest * common;
}

// Whether group `b` is group `a` moved by whole nodes of `node` devices: the same device types
// and offsets between members, at the same place within a node. Under the cost model's node
// structure (CostModel::NodeSize) such groups price alike.
bool MovedByNodes(const Placement& placement, const std::vector<int64_t>& a,
                  const std::vector<int64_t>& b, int64_t node) {
  if (node <= 0 || a.size() != b.size() || a.empty()) return false;
  const int64_t a0 = placement.device(a[0]).index;
  const int64_t b0 = placement.device(b[0]).index;
  if (a0 % node != b0 % node) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const DeviceId& da = placement.device(a[i]);
    const DeviceId& db = placement.device(b[i]);
    if (da.type != db.type || da.index - a0 != db.index - b0) return false;
  }
  return true;
}

// Prices one collective run on every group at once: the groups are disjoint and concurrent,
// so the step takes as long as its slowest group, and link bytes add up. A group that is the
// last priced one moved by whole nodes, with as many bytes, takes its price (a mesh's groups
// usually all are: 128 data-parallel groups of 8 are priced once, not 128 times).
void PriceCollective(const StepContext& ctx, CollectiveKind kind, BoxingStep& step,
                     const std::vector<int64_t>& group_bytes) {
  const Placement& placement = step.from.placement;
  const int64_t node = ctx.cost_model.NodeSize();
  size_t priced = step.groups.size();  // none yet
  double time = 0;
  LinkBytes link_bytes;
  for (size_t g = 0; g < step.groups.size(); ++g) {
    const bool same = priced < step.groups.size() && group_bytes[g] == group_bytes[priced] &&
                      MovedByNodes(placement, step.groups[priced], step.groups[g], node);
    if (!same) {
      const std::vector<DeviceId> devices = DevicesOf(placement, step.groups[g]);
      time = ctx.cost_model.CollectiveTime(kind, devices, group_bytes[g]);
      link_bytes = ctx.cost_model.CollectiveLinkBytes(kind, devices, group_bytes[g]);
      priced = g;
    }
    step.time = std::max(step.time, time);
    for (const auto& [link, bytes] : link_bytes) step.link_bytes[link] += bytes;
  }
}

}  // namespace

LayoutFacts ComputeFacts(const Shape& shape, Layout layout) {
  LayoutFacts facts;
  facts.regions = PhysicalRegions(shape, layout);
  const Shape& hierarchy = layout.placement.hierarchy();
  for (int a = 0; a < hierarchy.rank(); ++a) {
    if (layout.nd_sbp[a].is_partial() && hierarchy[a] > 1) facts.partial = true;
  }
  const Region full = Region::Full(shape);
  facts.all_full = !facts.partial;
  for (size_t i = 0; i < facts.regions.size(); ++i) {
    const bool holds_all = facts.regions[i] == full;
    facts.all_full = facts.all_full && holds_all;
    if (!facts.partial && holds_all && facts.full_holder < 0) {
      facts.full_holder = static_cast<int64_t>(i);
    }
  }
  facts.grid = std::make_shared<const RegionGrid>(facts.regions);
  facts.layout = std::move(layout);
  return facts;
}

std::optional<BoxingStep> AxisStep(const StepContext& ctx, const LayoutFacts& from,
                                   const LayoutFacts& to, int axis) {
  const Sbp& x = from.layout.nd_sbp[axis];
  const Sbp& to_sbp = to.layout.nd_sbp[axis];
  if (x == to_sbp) return std::nullopt;
  BoxingStep step;
  step.kind = BoxingStepKind::kLocalSlice;
  step.from = from.layout;
  step.to = to.layout;
  step.mesh_axis = axis;
  const int64_t p = from.layout.placement.hierarchy()[axis];
  if (p == 1) return step;  // one device on this axis: every Sbp names the same data
  if (!GroupsAreIndependent(from.layout, axis, x, to_sbp)) return std::nullopt;

  if (x.is_broadcast()) return step;  // B -> S keeps a part, B -> P keeps or zeroes
  if (x.is_split() && to_sbp.is_partial()) {
    // S -> P(sum) pads with zeros. Padding for max/min would need a value below (above)
    // everything, which integers lack once partial axes nest, so those go through B.
    if (to_sbp.op != ReduceOp::kSum) return std::nullopt;
    return step;
  }
  if (x.is_partial() && to_sbp.is_partial()) return std::nullopt;

  step.groups = from.layout.placement.AxisGroups(axis);
  const std::vector<Region>& to_regions = to.regions;
  std::vector<int64_t> group_bytes;
  CollectiveKind kind;
  if (x.is_partial()) {
    step.reduce_op = x.op;
    if (to_sbp.is_broadcast()) {
      step.kind = BoxingStepKind::kAllReduce;
      kind = CollectiveKind::kAllReduce;
    } else {
      step.kind = BoxingStepKind::kReduceScatter;
      kind = CollectiveKind::kReduceScatter;
      step.scatter_axis = to_sbp.axis;
    }
  } else if (to_sbp.is_broadcast()) {
    step.kind = BoxingStepKind::kAllGather;
    kind = CollectiveKind::kAllGather;
    step.gather_axis = x.axis;
  } else {
    step.kind = BoxingStepKind::kAllToAll;
    kind = CollectiveKind::kAllToAll;
    step.gather_axis = x.axis;
    step.scatter_axis = to_sbp.axis;
  }
  // S of the formulas, per group. Uneven parts are priced as p times the largest part, since
  // every ring round waits for the largest one.
  for (const std::vector<int64_t>& group : step.groups) {
    if (step.kind == BoxingStepKind::kAllReduce) {
      group_bytes.push_back(Bytes(from.regions[group[0]], ctx.dtype));
      continue;
    }
    int64_t largest = 0;
    if (step.kind == BoxingStepKind::kAllToAll) {  // the largest block that leaves its device
      largest = LargestAllToAllBlock(group, from.regions, to_regions, x.axis, to_sbp.axis) *
                DTypeSize(ctx.dtype);
    }
    for (int64_t m : group) {
      if (step.kind == BoxingStepKind::kReduceScatter) {
        largest = std::max(largest, Bytes(to_regions[m], ctx.dtype));
      } else if (step.kind == BoxingStepKind::kAllGather) {
        largest = std::max(largest, Bytes(from.regions[m], ctx.dtype));
      }
    }
    group_bytes.push_back(largest * p);
  }
  PriceCollective(ctx, kind, step, group_bytes);
  return step;
}

std::optional<BoxingStep> BroadcastStep(const StepContext& ctx, const LayoutFacts& from,
                                        const LayoutFacts& to) {
  if (from.layout.placement == to.layout.placement) return std::nullopt;
  if (from.full_holder < 0 || !to.all_full) return std::nullopt;
  // Root: a holder that is itself a destination, so it need not receive; else the first one.
  const Region full = Region::Full(ctx.shape);
  int64_t root = from.full_holder;
  for (size_t s = 0; s < from.regions.size(); ++s) {
    if (from.regions[s] == full &&
        to.layout.placement.ParallelIndexOf(from.layout.placement.device(s))) {
      root = static_cast<int64_t>(s);
      break;
    }
  }
  const DeviceId root_device = from.layout.placement.device(root);
  std::vector<DeviceId> group = {root_device};
  for (int64_t j = 0; j < to.layout.placement.size(); ++j) {
    if (to.layout.placement.device(j) != root_device)
      group.push_back(to.layout.placement.device(j));
  }
  BoxingStep step;
  step.kind = BoxingStepKind::kBroadcast;
  step.from = from.layout;
  step.to = to.layout;
  step.root = root;
  const int64_t bytes = Bytes(full, ctx.dtype);
  step.time = ctx.cost_model.CollectiveTime(CollectiveKind::kBroadcast, group, bytes);
  step.link_bytes = ctx.cost_model.CollectiveLinkBytes(CollectiveKind::kBroadcast, group, bytes);
  return step;
}

}  // namespace twinflow::sbp
