#include "engine/sbp/boxing_executor.h"

#include <string>
#include <utility>

#include "engine/core/error.h"
#include "engine/sbp/boxing_executor_internal.h"
#include "engine/sbp/slicing.h"

namespace twinflow::sbp {
namespace boxing_execution {

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

}  // namespace boxing_execution

namespace {

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
    const boxing_execution::StepContext ctx{plan.shape, plan.dtype, step, s + 1};
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
        result.cross_device_bytes += boxing_execution::RunCollective(ctx, current);
        break;
      case BoxingStepKind::kBroadcast:
        result.cross_device_bytes += boxing_execution::RunBroadcast(ctx, current);
        break;
      case BoxingStepKind::kLocalSlice:
        result.cross_device_bytes += boxing_execution::RunLocalSlice(ctx, current);
        break;
      case BoxingStepKind::kSendRecv:
        result.cross_device_bytes += boxing_execution::RunSendRecv(ctx, current);
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
