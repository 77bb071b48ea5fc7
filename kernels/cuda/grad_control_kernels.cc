// Host side of the CUDA gradient clipping, loss scaling and learning-rate kernels: sum_squares,
// grad_factor, loss_scale_update and lr_schedule (engine/ops/grad_control_ops.cc), on f32
// scalars in device memory.
#include "engine/core/lr_decay.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/grad_control_launch.h"
#include "kernels/cuda/host_helpers.h"

namespace twinflow::kernels::cuda {
namespace {

void SumSquares(const KernelContext& ctx) {
  CheckArity(ctx, 1, 1, "sum_squares");
  CheckDType(*ctx.inputs[0], DType::kF32, "sum_squares", "grad");
  const CudaEnv& env = Env(ctx, "sum_squares");
  const Scratch partials(env, kSumSquaresBlocks * static_cast<int64_t>(sizeof(double)));
  LaunchSumSquares(ctx.inputs[0]->data<float>(), ctx.inputs[0]->numel(),
                   static_cast<double*>(partials.get()), ctx.outputs[0]->data<float>(), env.stream);
}

void GradFactor(const KernelContext& ctx) {
  const bool scaled = ctx.inputs.size() == 2;
  CheckArity(ctx, scaled ? 2 : 1, 1, "grad_factor");
  LaunchGradFactor(F32ScalarOn(*ctx.inputs[0], "grad_factor", "norm_sq"),
                   scaled ? F32ScalarOn(*ctx.inputs[1], "grad_factor", "scale") : nullptr,
                   ctx.attrs.GetDouble("max_norm", 0), ctx.outputs[0]->data<float>(),
                   Env(ctx, "grad_factor").stream);
}

void LossScaleUpdate(const KernelContext& ctx) {
  const char* op = "loss_scale_update";
  CheckArity(ctx, 3, 2, op);
  LaunchLossScaleUpdate(
      F32ScalarOn(*ctx.inputs[0], op, "scale"), F32ScalarOn(*ctx.inputs[1], op, "good steps"),
      F32ScalarOn(*ctx.inputs[2], op, "norm_sq"), ctx.attrs.GetInt("window", 1000),
      ctx.attrs.GetDouble("min_scale", 1), ctx.outputs[0]->data<float>(),
      ctx.outputs[1]->data<float>(), Env(ctx, op).stream);
}

void LrSchedule(const KernelContext& ctx) {
  const char* op = "lr_schedule";
  CheckArity(ctx, 2, 1, op);
  LaunchLrSchedule(
      F32ScalarOn(*ctx.inputs[0], op, "step"), F32ScalarOn(*ctx.inputs[1], op, "base_lr"),
      LrScheduleArgs{static_cast<int>(LrDecayAttr(ctx.attrs)), ctx.attrs.GetDouble("warmup", 0),
                     ctx.attrs.GetDouble("decay_steps", 0), ctx.attrs.GetDouble("min_lr", 0)},
      ctx.outputs[0]->data<float>(), Env(ctx, op).stream);
}

}  // namespace

void RegisterGradControlCudaKernels(KernelRegistry& registry) {
  RegisterCuda(registry, "sum_squares", {DType::kF32}, SumSquares);
  RegisterCuda(registry, "grad_factor", {DType::kF32}, GradFactor);
  RegisterCuda(registry, "loss_scale_update", {DType::kF32}, LossScaleUpdate);
  RegisterCuda(registry, "lr_schedule", {DType::kF32}, LrSchedule);
}

}  // namespace twinflow::kernels::cuda
