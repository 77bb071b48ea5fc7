// One definition of the reduction kernels' checks, for the CPU and CUDA kernels alike.
#include "kernels/cpu/reduction_checks.h"

#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {

std::vector<bool> CheckReduce(const KernelContext& ctx, const std::string& op) {
  CheckArity(ctx, 1, 1, op);
  const Tensor& x = *ctx.inputs[0];
  const Tensor& y = *ctx.outputs[0];
  std::vector<bool> reduced = ReducedAxes(ctx.attrs, x.shape().rank(), op);
  CheckShape(y, ReducedShape(x.shape(), reduced, ctx.attrs.GetBool("keepdims", false)), op,
             "output");
  CheckDType(y, x.dtype(), op, "output");
  return reduced;
}

double ReduceMeanScale(const KernelContext& ctx, const std::vector<bool>& reduced) {
  const Shape& logical = LogicalInputShape(ctx, 0);
  int64_t count = 1;
  for (int i = 0; i < logical.rank(); ++i) count *= reduced[i] ? logical[i] : 1;
  return 1.0 / static_cast<double>(count);
}

std::vector<bool> CheckBroadcastReducedLike(const KernelContext& ctx) {
  const char* op = "broadcast_reduced_like";
  CheckArity(ctx, 2, 1, op);
  const Tensor& dy = *ctx.inputs[0];
  const Tensor& out = *ctx.outputs[0];
  const Shape& like = ctx.inputs[1]->shape();
  CheckShape(out, like, op, "output");
  CheckDType(out, dy.dtype(), op, "output");
  std::vector<bool> reduced = ReducedAxes(ctx.attrs, like.rank(), op);
  CheckShape(dy, ReducedShape(like, reduced, ctx.attrs.GetBool("keepdims", false)), op, "dy");
  return reduced;
}

std::vector<bool> CheckReduceMaxGrad(const KernelContext& ctx) {
  const char* op = "reduce_max_grad";
  CheckArity(ctx, 3, 1, op);
  const Tensor& x = *ctx.inputs[0];
  const Tensor& y = *ctx.inputs[1];
  const Tensor& dy = *ctx.inputs[2];
  const Tensor& dx = *ctx.outputs[0];
  std::vector<bool> reduced = ReducedAxes(ctx.attrs, x.shape().rank(), op);
  const Shape y_shape = ReducedShape(x.shape(), reduced, ctx.attrs.GetBool("keepdims", false));
  CheckShape(y, y_shape, op, "y");
  CheckShape(dy, y_shape, op, "dy");
  CheckShape(dx, x.shape(), op, "dx");
  for (const Tensor* t : {&y, &dy, &dx}) CheckDType(*t, x.dtype(), op, "every tensor");
  return reduced;
}

}  // namespace twinflow::kernels
