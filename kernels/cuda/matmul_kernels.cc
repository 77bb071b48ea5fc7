// CUDA matmul and batch_matmul through cuBLASLt, with the plan of each shape made once per
// device (matmul_plans.h).
#include <memory>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/matmul_plans.h"

namespace twinflow::kernels::cuda {
namespace {

// Checks the operands as the CPU kernel does and returns the problem's sizes.
Gemm CheckMatmul(const KernelContext& ctx, const std::string& op, bool batched) {
  CheckArity(ctx, 2, 1, op);
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  CheckDType(b, a.dtype(), op, "input b");
  CheckDType(*ctx.outputs[0], a.dtype(), op, "output");
  const int rank = a.shape().rank();
  if (rank < 2 || rank != b.shape().rank() || (!batched && rank != 2) || (batched && rank < 3)) {
    throw ShapeError(op + ": unsupported input shapes " + a.shape().ToString() + " and " +
                     b.shape().ToString());
  }
  Gemm g;
  g.ta = ctx.attrs.GetBool("transpose_a", false);
  g.tb = ctx.attrs.GetBool("transpose_b", false);
  const int r = rank - 2;
  std::vector<int64_t> out_dims;
  for (int i = 0; i < r; ++i) {
    if (a.shape()[i] != b.shape()[i]) {
      throw ShapeError(op + ": batch dimensions differ: " + a.shape().ToString() + " and " +
                       b.shape().ToString());
    }
    g.batch *= a.shape()[i];
    out_dims.push_back(a.shape()[i]);
  }
  g.m = a.shape()[r + (g.ta ? 1 : 0)];
  g.k = a.shape()[r + (g.ta ? 0 : 1)];
  g.n = b.shape()[r + (g.tb ? 0 : 1)];
  if (b.shape()[r + (g.tb ? 1 : 0)] != g.k) {
    throw ShapeError(op + ": contracted dimensions differ: " + a.shape().ToString() + " and " +
                     b.shape().ToString());
  }
  out_dims.push_back(g.m);
  out_dims.push_back(g.n);
  CheckShape(*ctx.outputs[0], Shape(out_dims), op, "output");
  return g;
}

void Matmul(const KernelContext& ctx, const std::string& op, bool batched) {
  const Gemm g = CheckMatmul(ctx, op, batched);
  const CudaEnv& env = Env(ctx, op);
  Tensor& c = *ctx.outputs[0];
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  if (g.k == 0) {  // an empty contraction (an empty split of k): the product is zero
    ZeroAsync(env, c.raw(), c.nbytes());
    return;
  }
  if (env.matmul_plans == nullptr) {
    throw InvalidArgumentError(op +
                               ": the CUDA env has no matmul plans (make it with OwnedCudaEnv)");
  }
  MatmulPlans& plans = *env.matmul_plans;
  const void* a = ctx.inputs[0]->raw();
  const void* b = ctx.inputs[1]->raw();
  const MatmulPlan& plan = plans.Get(env, g, ctx.inputs[0]->dtype(), AlignmentOf(a, b, c.raw()));
  RunMatmul(env, plan, a, b, c.raw());
}

}  // namespace

void RegisterMatmulCudaKernels(KernelRegistry& registry) {
  for (const char* name : {"matmul", "batch_matmul"}) {
    const std::string op = name;
    const bool batched = op == "batch_matmul";
    RegisterCuda(registry, op, {DType::kF32, DType::kBF16},
                 [op, batched](const KernelContext& ctx) { Matmul(ctx, op, batched); });
  }
}

}  // namespace twinflow::kernels::cuda
