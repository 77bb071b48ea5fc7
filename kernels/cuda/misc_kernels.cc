// Host side of the CUDA misc family: variable (fills its region by init), fill_like,
// zeros_like, ones_like, causal_mask, assign (nothing: the executor writes), dropout and
// recompute_gate.
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/misc_launch.h"

namespace twinflow::kernels::cuda {
namespace {

void Variable(const KernelContext& ctx) {
  CheckArity(ctx, 0, 1, "variable");
  Tensor& out = *ctx.outputs[0];
  const CudaEnv& env = Env(ctx, "variable");
  const std::string init = ctx.attrs.Has("init") ? ctx.attrs.GetString("init") : "zeros";
  if (init == "zeros" || init == "ones" || init == "constant") {
    const double value = init == "constant" ? ctx.attrs.GetDouble("value")
                         : init == "ones"   ? 1.0
                                            : 0.0;
    LaunchFill(out.dtype(), out.raw(), out.numel(), value, env.stream);
    return;
  }
  if (init != "normal" && init != "uniform") {
    throw InvalidArgumentError("variable: unknown init '" + init + "'");
  }
  const uint64_t seed = static_cast<uint64_t>(ctx.attrs.GetInt("seed", 0));
  const bool normal = init == "normal";
  const double scale = normal ? ctx.attrs.GetDouble("std", 1.0) : ctx.attrs.GetDouble("scale", 1.0);
  LaunchRandomInit(normal ? RandomInit::kNormal : RandomInit::kUniform, out.dtype(), out.raw(),
                   MakeLogicalIndexer(ctx, 0, "variable"), seed, scale, env.stream);
}

void Fill(const KernelContext& ctx, double value) {
  CheckArity(ctx, 1, 1, "fill_like");
  Tensor& out = *ctx.outputs[0];
  LaunchFill(out.dtype(), out.raw(), out.numel(), value, Env(ctx, "fill_like").stream);
}

void CausalMask(const KernelContext& ctx) {
  CheckArity(ctx, 1, 1, "causal_mask");
  Tensor& out = *ctx.outputs[0];
  const LogicalIndexer ix = MakeLogicalIndexer(ctx, 0, "causal_mask");
  const Shape logical =
      ctx.output_logical_shapes.empty() ? out.shape() : ctx.output_logical_shapes[0];
  if (logical.rank() != 2) {
    throw ShapeError("causal_mask: output " + logical.ToString() + " is not 2-D");
  }
  LaunchCausalMask(out.dtype(), out.raw(), ix, logical[1], Env(ctx, "causal_mask").stream);
}

void Dropout(const KernelContext& ctx) {
  CheckArity(ctx, 1, 1, "dropout");
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  CheckShape(y, x.shape(), "dropout", "output");
  CheckDType(y, x.dtype(), "dropout", "output");
  LaunchDropout(x.dtype(), x.raw(), y.raw(), MakeLogicalIndexer(ctx, 0, "dropout"),
                ctx.attrs.GetDouble("rate"), static_cast<uint64_t>(ctx.attrs.GetInt("seed")),
                Env(ctx, "dropout").stream);
}

void RecomputeGate(const KernelContext& ctx) {
  CheckMapsInput(ctx, 2, "recompute_gate");
  const Tensor& x = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  CopyAsync(Env(ctx, "recompute_gate"), out.raw(), x.raw(), x.nbytes());
}

}  // namespace

void RegisterMiscCudaKernels(KernelRegistry& registry) {
  const std::initializer_list<DType> all = {DType::kF32, DType::kBF16, DType::kI32, DType::kI64};
  RegisterCuda(registry, "variable", all, Variable);
  RegisterCuda(registry, "fill_like", all,
               [](const KernelContext& ctx) { Fill(ctx, ctx.attrs.GetDouble("value")); });
  RegisterCuda(registry, "zeros_like", all, [](const KernelContext& ctx) { Fill(ctx, 0); });
  RegisterCuda(registry, "ones_like", all, [](const KernelContext& ctx) { Fill(ctx, 1); });
  RegisterCuda(registry, "causal_mask", {DType::kF32, DType::kBF16}, CausalMask);
  RegisterCuda(registry, "assign", all, [](const KernelContext&) {});
  RegisterCuda(registry, "dropout", {DType::kF32, DType::kBF16}, Dropout);
  RegisterCuda(registry, "recompute_gate", all, RecomputeGate);
}

}  // namespace twinflow::kernels::cuda
