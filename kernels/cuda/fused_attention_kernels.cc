// Registers the CUDA fused_attention and fused_attention_grad kernels (f32 and bf16; lse and
// dlse f32): shapes are checked on the host as the CPU kernels check them (attention_shape.h),
// then fused_attention.cu's launchers enqueue the work on the device's compute stream.
#include <string>

#include "engine/core/error.h"
#include "kernels/attention_shape.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/fused_attention_launch.h"
#include "kernels/cuda/host_helpers.h"

namespace twinflow::kernels::cuda {
namespace {

AttentionDims Dims(const KernelContext& ctx, const AttentionShape& s, const char* op) {
  if (s.head_dim > kMaxAttentionHeadDim) {
    throw InvalidArgumentError(std::string(op) + ": the cuda kernel takes head dims up to " +
                               std::to_string(kMaxAttentionHeadDim) + ", got " +
                               std::to_string(s.head_dim));
  }
  if (s.q_len > kMaxAttentionRows || s.kv_len > kMaxAttentionRows) {
    throw InvalidArgumentError(std::string(op) + ": the cuda kernel takes sequences up to " +
                               std::to_string(kMaxAttentionRows) + " tokens");
  }
  // The gradient's lse (input 4) and dlse (input 6) are f32 whatever q's dtype.
  for (size_t i = 4; i < ctx.inputs.size(); i += 2) {
    if (ctx.inputs[i]->dtype() != DType::kF32) {
      throw InvalidArgumentError(std::string(op) + ": lse and dlse must be f32 on cuda");
    }
  }
  AttentionDims d;
  d.batch = s.batch;
  d.q_len = s.q_len;
  d.kv_len = s.kv_len;
  d.hidden = s.hidden;
  d.heads = s.heads;
  d.head_dim = s.head_dim;
  d.kv_hidden = s.kv_hidden;
  d.group = s.group;
  d.q_offset = s.q_offset;
  d.causal = s.causal;
  d.scale = static_cast<float>(s.scale);
  d.bf16 = ctx.inputs[0]->dtype() == DType::kBF16;
  return d;
}

void Forward(const KernelContext& ctx) {
  const AttentionShape s = CheckAttentionForward(ctx);
  if (ctx.outputs[1]->dtype() != DType::kF32) {
    throw InvalidArgumentError("fused_attention: lse must be f32 on cuda");
  }
  const AttentionForwardArgs args{ctx.inputs[0]->raw(), ctx.inputs[1]->raw(), ctx.inputs[2]->raw(),
                                  ctx.outputs[0]->raw(), ctx.outputs[1]->data<float>()};
  LaunchAttentionForward(Dims(ctx, s, "fused_attention"), args, Env(ctx, "fused_attention").stream);
}

void Grad(const KernelContext& ctx) {
  const AttentionShape s = CheckAttentionGrad(ctx);
  const bool with_dlse = ctx.inputs.size() == 7;
  const AttentionDims dims = Dims(ctx, s, "fused_attention_grad");
  const CudaEnv& env = Env(ctx, "fused_attention_grad");
  const Scratch delta(env, dims.batch * dims.heads * dims.q_len * int64_t{sizeof(float)});
  const AttentionGradArgs args{ctx.inputs[0]->raw(),
                               ctx.inputs[1]->raw(),
                               ctx.inputs[2]->raw(),
                               ctx.inputs[3]->raw(),
                               ctx.inputs[5]->raw(),
                               ctx.inputs[4]->data<float>(),
                               with_dlse ? ctx.inputs[6]->data<float>() : nullptr,
                               ctx.outputs[0]->raw(),
                               ctx.outputs[1]->raw(),
                               ctx.outputs[2]->raw(),
                               static_cast<float*>(delta.get())};
  LaunchAttentionGrad(dims, args, env.stream);
}

}  // namespace

void RegisterFusedAttentionCudaKernels(KernelRegistry& registry) {
  RegisterCuda(registry, "fused_attention", {DType::kF32, DType::kBF16}, Forward);
  RegisterCuda(registry, "fused_attention_grad", {DType::kF32, DType::kBF16}, Grad);
}

}  // namespace twinflow::kernels::cuda
