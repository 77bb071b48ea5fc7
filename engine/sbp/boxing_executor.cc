#include "engine/sbp/boxing_executor.h"

#include <algorithm>
#include <string>
#include <utility>

#include "engine/core/error.h"
#include "engine/sbp/collective_reference.h"
#include "engine/sbp/slicing.h"

namespace twinflow::sbp {
namespace {

// What one step sees: the logical shape, the step and its 1-based number for messages.
struct StepContext {
  const Shape& shape;
  DType dtype;
  const BoxingStep& step;
  size_t number;

  std::string Name() const {
    return "step " + std::to_string(number) + " (" + BoxingStepKindName(step.kind) + ")";
  }
};

int64_t Bytes(const Tensor& t) { return t.nbytes(); }

// A partial value on a mesh axis with more than one device cannot be cut or copied piecewise.
bool HasRealPartial(const Layout& layout) {
  for (int a = 0; a < layout.nd_sbp.size(); ++a) {
    if (layout.nd_sbp[a].is_partial() && layout.placement.hierarchy()[a] > 1) return true;
  }
  return false;
}

void CheckSamePlacement(const StepContext& ctx) {
  if (ctx.step.from.placement != ctx.step.to.placement) {
    throw SbpError(ctx.Name() + " must keep its placement, but goes from " +
                   ctx.step.from.placement.ToString() + " to " + ctx.step.to.placement.ToString());
  }
}

void CheckMeshAxis(const StepContext& ctx) {
  const int rank = ctx.step.from.placement.hierarchy().rank();
  if (ctx.step.mesh_axis < 0 || ctx.step.mesh_axis >= rank) {
    throw SbpError(ctx.Name() + " has mesh axis " + std::to_string(ctx.step.mesh_axis) +
                   " but the hierarchy " + ctx.step.from.placement.hierarchy().ToString() +
                   " has " + std::to_string(rank) + " axes");
  }
}

// Every device in exactly one group.
void CheckGroups(const StepContext& ctx) {
  const Placement& placement = ctx.step.from.placement;
  std::vector<int> seen(static_cast<size_t>(placement.size()), 0);
  for (const auto& group : ctx.step.groups) {
    if (group.empty()) throw SbpError(ctx.Name() + " has an empty group");
    for (int64_t i : group) {
      if (i < 0 || i >= placement.size()) {
        throw SbpError(ctx.Name() + " names parallel index " + std::to_string(i) + ", outside " +
                       placement.ToString());
      }
      if (seen[static_cast<size_t>(i)]++) {
        throw SbpError(ctx.Name() + " puts device " + placement.device(i).ToString() +
                       " in more than one group");
      }
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) {
      throw SbpError(ctx.Name() + " leaves device " +
                     placement.device(static_cast<int64_t>(i)).ToString() + " out of every group");
    }
  }
}

std::string GroupName(const Placement& placement, const std::vector<int64_t>& group) {
  std::string s;
  for (int64_t i : group) s += (s.empty() ? "" : " ") + placement.device(i).ToString();
  return "[" + s + "]";
}

// A collective along a mesh axis runs among the devices that differ only on that axis. The
// member order is the data order for every kind but all_reduce (pieces are joined or cut in it).
void CheckAxisGroups(const StepContext& ctx) {
  const BoxingStep& step = ctx.step;
  if (step.mesh_axis == -1) return;  // a collective over an explicit partition of the devices
  CheckMeshAxis(ctx);
  const bool ordered = step.kind != BoxingStepKind::kAllReduce;
  std::vector<std::vector<int64_t>> expected = step.from.placement.AxisGroups(step.mesh_axis);
  if (!ordered) {
    for (auto& g : expected) std::sort(g.begin(), g.end());
  }
  for (const auto& group : step.groups) {
    std::vector<int64_t> got = group;
    if (!ordered) std::sort(got.begin(), got.end());
    if (std::find(expected.begin(), expected.end(), got) == expected.end()) {
      throw SbpError(ctx.Name() + " on mesh axis " + std::to_string(step.mesh_axis) +
                     " uses group " + GroupName(step.from.placement, group) +
                     ", which is not a line of the mesh along that axis" +
                     (ordered ? " in axis order" : ""));
    }
  }
}

int64_t RunCollective(const StepContext& ctx, std::vector<Tensor>& current) {
  CheckSamePlacement(ctx);
  CheckGroups(ctx);
  CheckAxisGroups(ctx);
  const BoxingStep& step = ctx.step;
  int64_t moved = 0;
  for (const auto& group : step.groups) {
    std::vector<Tensor> buffers;
    for (int64_t i : group) buffers.push_back(std::move(current[static_cast<size_t>(i)]));
    const int64_t p = static_cast<int64_t>(group.size());
    std::vector<Tensor> outputs;
    try {
      switch (step.kind) {
        case BoxingStepKind::kAllGather: {
          outputs = AllGather(buffers, step.gather_axis);
          int64_t total = 0;
          for (const Tensor& b : buffers) total += Bytes(b);
          for (const Tensor& b : buffers) moved += total - Bytes(b);
          break;
        }
        case BoxingStepKind::kAllReduce:
          outputs = AllReduce(buffers, step.reduce_op);
          for (const Tensor& b : buffers) moved += (p - 1) * Bytes(b);
          break;
        case BoxingStepKind::kReduceScatter:
          outputs = ReduceScatter(buffers, step.reduce_op, step.scatter_axis);
          for (const Tensor& o : outputs) moved += (p - 1) * Bytes(o);
          break;
        case BoxingStepKind::kAllToAll: {
          outputs = AllToAll(buffers, step.scatter_axis, step.gather_axis);
          // Off-diagonal blocks: everything received but the block a member keeps for itself.
          for (int64_t i = 0; i < p; ++i) {
            const Tensor& b = buffers[static_cast<size_t>(i)];
            const int64_t extent = b.shape()[step.scatter_axis];
            const int64_t kept = BalancedPart(Range{0, extent}, p, i).size();
            const int64_t own = extent == 0 ? 0 : Bytes(b) / extent * kept;
            moved += Bytes(outputs[static_cast<size_t>(i)]) - own;
          }
          break;
        }
        default:
          break;
      }
    } catch (const ShapeError& e) {
      throw ShapeError(ctx.Name() + " on group " + GroupName(step.from.placement, group) + ": " +
                       e.what());
    }
    for (size_t k = 0; k < group.size(); ++k) {
      current[static_cast<size_t>(group[k])] = std::move(outputs[k]);
    }
  }
  return moved;
}

int64_t RunBroadcast(const StepContext& ctx, std::vector<Tensor>& current) {
  const BoxingStep& step = ctx.step;
  const Placement& from = step.from.placement;
  if (step.root < 0 || step.root >= from.size()) {
    throw SbpError(ctx.Name() + " has root " + std::to_string(step.root) + ", outside " +
                   from.ToString());
  }
  const DeviceId root = from.device(step.root);
  if (HasRealPartial(step.from)) {
    throw SbpError(ctx.Name() + " broadcasts from " + root.ToString() + " but " +
                   step.from.ToString() + " holds only a partial value there");
  }
  Tensor source = std::move(current[static_cast<size_t>(step.root)]);
  if (source.shape() != ctx.shape) {
    throw SbpError(ctx.Name() + ": root " + root.ToString() + " holds " +
                   source.shape().ToString() + ", not the whole tensor " + ctx.shape.ToString());
  }
  // Copies of one value are a valid B, P(max) or P(min), but not a P(sum): that would count it
  // once per device.
  for (int a = 0; a < step.to.nd_sbp.size(); ++a) {
    const Sbp& y = step.to.nd_sbp[a];
    if (y.is_partial() && y.op == ReduceOp::kSum && step.to.placement.hierarchy()[a] > 1) {
      throw SbpError(ctx.Name() +
                     " copies one value to every device, which is not the partial "
                     "sum " +
                     step.to.ToString());
    }
  }
  const Placement& to = step.to.placement;
  int64_t moved = 0;
  current.assign(static_cast<size_t>(to.size()), Tensor());
  for (int64_t j = 0; j < to.size(); ++j) {
    current[static_cast<size_t>(j)] = source;
    if (to.device(j) != root) moved += Bytes(source);
  }
  return moved;
}

Tensor LocalSliceOne(const StepContext& ctx, const Tensor& buffer, int64_t d) {
  const BoxingStep& step = ctx.step;
  const int a = step.mesh_axis;
  const Sbp& x = step.from.nd_sbp[a];
  const Sbp& y = step.to.nd_sbp[a];
  const int64_t p = step.from.placement.hierarchy()[a];
  const Region rs = PhysicalRegion(ctx.shape, step.from, d);
  const Region rd = PhysicalRegion(ctx.shape, step.to, d);
  const std::string device = step.from.placement.device(d).ToString();
  if (y.is_partial() && x.is_broadcast() && p > 1) {
    if (rs != rd) {
      throw SbpError(ctx.Name() + ": device " + device + " holds " + rs.ToString() +
                     " but must keep it as " + rd.ToString());
    }
    if (y.op == ReduceOp::kSum && step.from.placement.MeshCoord(d)[a] != 0) {
      return Tensor(rd.shape(), buffer.dtype());
    }
    return buffer;
  }
  if (y.is_partial() && y.op == ReduceOp::kSum && x.is_split() && p > 1) {
    if (!rd.Contains(rs)) {
      throw SbpError(ctx.Name() + ": device " + device + " holds " + rs.ToString() +
                     ", which is not inside its new region " + rd.ToString());
    }
    Tensor out(rd.shape(), buffer.dtype());
    out.CopyRegionFrom(buffer, Region::Full(buffer.shape()), rs.RelativeTo(rd));
    return out;
  }
  if (x.is_partial() && p > 1) {
    throw SbpError(ctx.Name() + ": a partial value cannot be sliced locally (" +
                   step.from.ToString() + " -> " + step.to.ToString() + ")");
  }
  if (!rs.Contains(rd)) {
    throw SbpError(ctx.Name() + ": device " + device + " holds " + rs.ToString() + " but needs " +
                   rd.ToString());
  }
  return buffer.Slice(rd.RelativeTo(rs));
}

int64_t RunLocalSlice(const StepContext& ctx, std::vector<Tensor>& current) {
  CheckSamePlacement(ctx);
  CheckMeshAxis(ctx);
  const BoxingStep& step = ctx.step;
  for (int a = 0; a < step.from.nd_sbp.size(); ++a) {
    if (a != step.mesh_axis && !(step.from.nd_sbp[a] == step.to.nd_sbp[a])) {
      throw SbpError(ctx.Name() + " slices along mesh axis " + std::to_string(step.mesh_axis) +
                     " but also changes mesh axis " + std::to_string(a) + " (" +
                     step.from.ToString() + " -> " + step.to.ToString() + ")");
    }
  }
  for (size_t d = 0; d < current.size(); ++d) {
    current[d] = LocalSliceOne(ctx, current[d], static_cast<int64_t>(d));
  }
  return 0;
}

int64_t RunSendRecv(const StepContext& ctx, std::vector<Tensor>& current) {
  const BoxingStep& step = ctx.step;
  for (const Layout* layout : {&step.from, &step.to}) {
    if (HasRealPartial(*layout)) {
      throw SbpError(ctx.Name() + " cannot copy slices of the partial layout " +
                     layout->ToString());
    }
  }
  const Placement& from = step.from.placement;
  const Placement& to = step.to.placement;
  const DType dtype = ctx.dtype;
  std::vector<Region> src_regions = PhysicalRegions(ctx.shape, step.from);
  std::vector<Region> dst_regions = PhysicalRegions(ctx.shape, step.to);
  std::vector<Tensor> next;
  for (int64_t j = 0; j < to.size(); ++j) next.emplace_back(dst_regions[j].shape(), dtype);
  std::vector<std::vector<Region>> received(static_cast<size_t>(to.size()));
  int64_t moved = 0;
  for (const RegionTransfer& t : step.transfers) {
    if (t.src_index < 0 || t.src_index >= from.size() || t.dst_index < 0 ||
        t.dst_index >= to.size()) {
      throw SbpError(ctx.Name() + " has a transfer " + std::to_string(t.src_index) + " -> " +
                     std::to_string(t.dst_index) + " outside " + from.ToString() + " -> " +
                     to.ToString());
    }
    const std::string route = from.device(t.src_index).ToString() + " -> " +
                              to.device(t.dst_index).ToString() + " " + t.region.ToString();
    const Region& rs = src_regions[static_cast<size_t>(t.src_index)];
    const Region& rd = dst_regions[static_cast<size_t>(t.dst_index)];
    if (t.region.rank() != ctx.shape.rank() || !rs.Contains(t.region) || !rd.Contains(t.region)) {
      throw SbpError(ctx.Name() + ": transfer " + route + " is not inside the source's " +
                     rs.ToString() + " and the destination's " + rd.ToString());
    }
    if (t.region.empty()) continue;
    auto& into = received[static_cast<size_t>(t.dst_index)];
    for (const Region& earlier : into) {
      if (!earlier.Intersect(t.region).empty()) {
        throw SbpError(ctx.Name() + ": device " + to.device(t.dst_index).ToString() + " receives " +
                       earlier.Intersect(t.region).ToString() + " twice");
      }
    }
    into.push_back(t.region);
    next[static_cast<size_t>(t.dst_index)].CopyRegionFrom(current[static_cast<size_t>(t.src_index)],
                                                          t.region.RelativeTo(rs),
                                                          t.region.RelativeTo(rd));
    if (from.device(t.src_index) != to.device(t.dst_index)) {
      moved += t.region.numel() * DTypeSize(dtype);
    }
  }
  for (int64_t j = 0; j < to.size(); ++j) {
    int64_t got = 0;
    for (const Region& r : received[static_cast<size_t>(j)]) got += r.numel();
    if (got != dst_regions[static_cast<size_t>(j)].numel()) {
      throw SbpError(ctx.Name() + ": device " + to.device(j).ToString() + " receives " +
                     std::to_string(got) + " of " +
                     std::to_string(dst_regions[static_cast<size_t>(j)].numel()) + " elements");
    }
  }
  current = std::move(next);
  return moved;
}

// Every buffer must have the shape its layout gives it; a mismatch means the plan is wrong.
void CheckBuffers(const std::vector<Tensor>& buffers, const Shape& shape, DType dtype,
                  const Layout& layout, const std::string& where) {
  if (static_cast<int64_t>(buffers.size()) != layout.placement.size()) {
    throw ShapeError(where + ": " + std::to_string(buffers.size()) + " buffers for the " +
                     std::to_string(layout.placement.size()) + " devices of " + layout.ToString());
  }
  for (int64_t i = 0; i < layout.placement.size(); ++i) {
    const Tensor& t = buffers[static_cast<size_t>(i)];
    const Shape expected = PhysicalShape(shape, layout, i);
    if (t.shape() != expected || t.dtype() != dtype) {
      throw ShapeError(where + ": device " + layout.placement.device(i).ToString() + " holds " +
                       DTypeName(t.dtype()) + t.shape().ToString() + " but " + layout.ToString() +
                       " needs " + DTypeName(dtype) + expected.ToString());
    }
  }
}

}  // namespace

BoxingResult ExecuteBoxing(const BoxingPlan& plan, std::vector<Tensor> inputs) {
  plan.src.Validate(plan.shape);
  plan.dst.Validate(plan.shape);
  CheckBuffers(inputs, plan.shape, plan.dtype, plan.src, "boxing input");
  BoxingResult result;
  std::vector<Tensor> current = std::move(inputs);
  Layout layout = plan.src;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const BoxingStep& step = plan.steps[s];
    const StepContext ctx{plan.shape, plan.dtype, step, s + 1};
    if (!(step.from == layout)) {
      throw SbpError("step " + std::to_string(s + 1) + " starts from " + step.from.ToString() +
                     " but the tensor is laid out as " + layout.ToString());
    }
    step.to.Validate(plan.shape);
    switch (step.kind) {
      case BoxingStepKind::kAllGather:
      case BoxingStepKind::kAllReduce:
      case BoxingStepKind::kReduceScatter:
      case BoxingStepKind::kAllToAll:
        result.cross_device_bytes += RunCollective(ctx, current);
        break;
      case BoxingStepKind::kBroadcast:
        result.cross_device_bytes += RunBroadcast(ctx, current);
        break;
      case BoxingStepKind::kLocalSlice:
        result.cross_device_bytes += RunLocalSlice(ctx, current);
        break;
      case BoxingStepKind::kSendRecv:
        result.cross_device_bytes += RunSendRecv(ctx, current);
        break;
    }
    layout = step.to;
    CheckBuffers(current, plan.shape, plan.dtype, layout, "after " + ctx.Name());
  }
  if (!(layout == plan.dst)) {
    throw SbpError("the plan ends at " + layout.ToString() + " but its destination is " +
                   plan.dst.ToString());
  }
  result.outputs = std::move(current);
  return result;
}

}  // namespace twinflow::sbp
