// Host side of embedding, embedding_grad and rotary on CUDA: the weight's (dweight's) row range in
// the logical table selects the ids this device handles; ids are range-checked on the device.
#include "kernels/cpu/embedding_checks.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/device_fault.h"
#include "kernels/cuda/embedding_launch.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/softmax_launch.h"

namespace twinflow::kernels::cuda {
namespace {

void Embedding(const KernelContext& ctx) {
  const char* op = "embedding";
  const auto [rows, width] = CheckEmbedding(ctx);
  const Tensor& weight = *ctx.inputs[0];
  const Tensor& ids = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  const Range range = InputRange(ctx, 0, 0);
  const IdSlice s{ids.raw(), ids.dtype() == DType::kI64, ids.numel(), range.begin, range.end, rows};
  const CudaEnv& env = Env(ctx, op);
  LaunchCheckIndices(s.ids, s.is64, s.count, LogicalInputShape(ctx, 0)[0], env.error_flag,
                     kEmbeddingIdOutOfRange, env.stream);
  LaunchEmbedding(weight.dtype(), weight.raw(), s, out.raw(), width, env.stream);
}

void EmbeddingGrad(const KernelContext& ctx) {
  const char* op = "embedding_grad";
  const auto [rows, width] = CheckEmbeddingGrad(ctx);
  const Tensor& dy = *ctx.inputs[0];
  const Tensor& ids = *ctx.inputs[1];
  Tensor& dweight = *ctx.outputs[0];
  const Range range = OutputRange(ctx, 0, 0);
  const IdSlice s{ids.raw(), ids.dtype() == DType::kI64, ids.numel(), range.begin, range.end, rows};
  const CudaEnv& env = Env(ctx, op);
  LaunchCheckIndices(s.ids, s.is64, s.count, ctx.attrs.GetInt("num_embeddings"), env.error_flag,
                     kEmbeddingGradIdOutOfRange, env.stream);
  LaunchEmbeddingGrad(dy.dtype(), dy.raw(), s, dweight.raw(), width, env.stream);
}

void Rotary(const KernelContext& ctx) {
  const RotaryView v = CheckRotary(ctx);
  LaunchRotary(ctx.inputs[0]->dtype(), ctx.inputs[0]->raw(), ctx.outputs[0]->raw(),
               RotaryShape{v.batch, v.seq, v.width, v.head_dim, v.first_position}, v.theta,
               v.inverse, Env(ctx, "rotary").stream);
}

}  // namespace

void RegisterEmbeddingCudaKernels(KernelRegistry& registry) {
  RegisterCuda(registry, "embedding", {DType::kF32, DType::kBF16}, Embedding);
  RegisterCuda(registry, "embedding_grad", {DType::kF32, DType::kBF16}, EmbeddingGrad);
  RegisterCuda(registry, "rotary", {DType::kF32, DType::kBF16}, Rotary);
}

}  // namespace twinflow::kernels::cuda
