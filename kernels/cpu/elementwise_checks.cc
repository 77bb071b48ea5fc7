// One definition of the elementwise kernels' checks, for the CPU and CUDA kernels alike.
#include "kernels/cpu/elementwise_checks.h"

#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {

std::vector<std::vector<int64_t>> CheckBinary(const KernelContext& ctx, const std::string& name) {
  CheckArity(ctx, 2, 1, name);
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  CheckDType(b, a.dtype(), name, "input 1");
  CheckDType(out, a.dtype(), name, "output");
  CheckShape(out, BroadcastShape(a.shape(), b.shape(), name), name, "output");
  return {BroadcastStrides(a.shape(), out.shape(), name, "input 0"),
          BroadcastStrides(b.shape(), out.shape(), name, "input 1")};
}

int CheckBiasAdd(const KernelContext& ctx) {
  const std::string name = "bias_add";
  CheckArity(ctx, 2, 1, name);
  const Tensor& x = *ctx.inputs[0];
  const Tensor& bias = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  CheckDType(bias, x.dtype(), name, "bias");
  CheckDType(out, x.dtype(), name, "output");
  const int axis = KernelAxis(ctx.attrs.GetInt("axis", -1), x.shape().rank(), name);
  CheckShape(bias, Shape{x.shape()[axis]}, name, "bias");
  CheckShape(out, x.shape(), name, "output");
  return axis;
}

int CheckBiasAddGrad(const KernelContext& ctx) {
  const std::string name = "bias_add_grad";
  CheckArity(ctx, 1, 1, name);
  const Tensor& dy = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  CheckDType(out, dy.dtype(), name, "output");
  const int axis = KernelAxis(ctx.attrs.GetInt("axis", -1), dy.shape().rank(), name);
  CheckShape(out, Shape{dy.shape()[axis]}, name, "output");
  return axis;
}

std::vector<int64_t> CheckReduceSumLike(const KernelContext& ctx) {
  const std::string name = "reduce_sum_like";
  CheckArity(ctx, 2, 1, name);
  const Tensor& dy = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  CheckDType(out, dy.dtype(), name, "output");
  CheckShape(out, ctx.inputs[1]->shape(), name, "output");
  return BroadcastStrides(out.shape(), dy.shape(), name, "output");
}

std::vector<int64_t> CheckBroadcastLike(const KernelContext& ctx) {
  const std::string name = "broadcast_like";
  CheckArity(ctx, 2, 1, name);
  const Tensor& x = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  CheckDType(out, x.dtype(), name, "output");
  CheckShape(out, ctx.inputs[1]->shape(), name, "output");
  return BroadcastStrides(x.shape(), out.shape(), name, "input");
}

}  // namespace twinflow::kernels
