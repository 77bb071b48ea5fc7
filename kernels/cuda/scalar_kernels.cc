// Host side of scalar_add, scalar_mul, scalar_pow, identity and cast on CUDA.
#include <cmath>

#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/scalar_launch.h"

namespace twinflow::kernels::cuda {
namespace {

void CheckUnary(const KernelContext& ctx, const std::string& name, DType out_dtype) {
  CheckArity(ctx, 1, 1, name);
  CheckDType(*ctx.outputs[0], out_dtype, name, "output");
  CheckShape(*ctx.outputs[0], ctx.inputs[0]->shape(), name, "output");
}

void Scalar(const KernelContext& ctx, const std::string& name, ScalarOp op, double value) {
  CheckUnary(ctx, name, ctx.inputs[0]->dtype());
  const Tensor& x = *ctx.inputs[0];
  LaunchScalar(op, x.dtype(), x.raw(), ctx.outputs[0]->raw(), x.numel(), value,
               Env(ctx, name).stream);
}

void Identity(const KernelContext& ctx) {
  CheckUnary(ctx, "identity", ctx.inputs[0]->dtype());
  CopyAsync(Env(ctx, "identity"), ctx.outputs[0]->raw(), ctx.inputs[0]->raw(),
            ctx.inputs[0]->nbytes());
}

void Cast(const KernelContext& ctx) {
  const DType to = ParseDType(ctx.attrs.GetString("dtype"));
  CheckUnary(ctx, "cast", to);
  const Tensor& x = *ctx.inputs[0];
  LaunchCast(x.dtype(), to, x.raw(), ctx.outputs[0]->raw(), x.numel(), Env(ctx, "cast").stream);
}

}  // namespace

void RegisterScalarCudaKernels(KernelRegistry& registry) {
  const auto numeric = {DType::kF32, DType::kBF16, DType::kI32, DType::kI64};
  RegisterCuda(registry, "scalar_add", numeric, [](const KernelContext& ctx) {
    Scalar(ctx, "scalar_add", ScalarOp::kAdd, ctx.attrs.GetDouble("value"));
  });
  RegisterCuda(registry, "scalar_mul", numeric, [](const KernelContext& ctx) {
    Scalar(ctx, "scalar_mul", ScalarOp::kMul, ctx.attrs.GetDouble("value"));
  });
  RegisterCuda(registry, "scalar_pow", {DType::kF32, DType::kBF16}, [](const KernelContext& ctx) {
    Scalar(ctx, "scalar_pow", ScalarOp::kPow, ctx.attrs.GetDouble("exponent"));
  });
  const auto all = {DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kBF16, DType::kF16};
  RegisterCuda(registry, "identity", all, Identity);
  RegisterCuda(registry, "cast", all, Cast);
}

}  // namespace twinflow::kernels::cuda
