// The collective boxing steps (all_gather, all_reduce, reduce_scatter, all_to_all): their
// groups are checked against the mesh, then the reference collectives run on each group.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/sbp/boxing_executor_internal.h"
#include "engine/sbp/collective_reference.h"
#include "engine/sbp/slicing.h"

namespace twinflow::sbp::boxing_execution {
namespace {

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

}  // namespace

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

}  // namespace twinflow::sbp::boxing_execution
