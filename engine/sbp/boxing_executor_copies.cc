// The boxing steps that copy rather than reduce: broadcasts from one root, local slices that
// keep data on its device, and send/recv transfers of regions between devices.
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/sbp/boxing_executor_internal.h"
#include "engine/sbp/slicing.h"

namespace twinflow::sbp::boxing_execution {
namespace {

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

}  // namespace

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

}  // namespace twinflow::sbp::boxing_execution
