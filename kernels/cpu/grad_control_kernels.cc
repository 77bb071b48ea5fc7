// CPU kernels of gradient clipping, loss scaling and the learning-rate schedule
// (engine/ops/grad_control_ops.cc).
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/lr_decay.h"
#include "kernels/cpu/kernel_families.h"
#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
namespace {

// Summed in double in element order: the same bytes give the same sum on every run.
void SumSquares(const KernelContext& ctx) {
  CheckArity(ctx, 1, 1, "sum_squares");
  CheckDType(*ctx.inputs[0], DType::kF32, "sum_squares", "grad");
  const float* g = ctx.inputs[0]->data<float>();
  double sum = 0;
  for (int64_t i = 0, n = ctx.inputs[0]->numel(); i < n; ++i) sum += double(g[i]) * g[i];
  ctx.outputs[0]->SetDouble(0, sum);
}

void GradFactor(const KernelContext& ctx) {
  const bool scaled = ctx.inputs.size() == 2;
  CheckArity(ctx, scaled ? 2 : 1, 1, "grad_factor");
  const double norm_sq = ScalarValue(*ctx.inputs[0], "grad_factor", "norm_sq");
  const double scale = scaled ? ScalarValue(*ctx.inputs[1], "grad_factor", "scale") : 1.0;
  const double max_norm = ctx.attrs.GetDouble("max_norm", 0);
  double factor = std::numeric_limits<double>::quiet_NaN();
  if (std::isfinite(norm_sq)) {
    factor = 1 / scale;
    const double norm = std::sqrt(norm_sq) / scale;
    if (max_norm > 0) factor *= std::min(1.0, max_norm / (norm + 1e-6));
  }
  ctx.outputs[0]->SetDouble(0, factor);
}

void LossScaleUpdate(const KernelContext& ctx) {
  CheckArity(ctx, 3, 2, "loss_scale_update");
  const double scale = ScalarValue(*ctx.inputs[0], "loss_scale_update", "scale");
  const double good = ScalarValue(*ctx.inputs[1], "loss_scale_update", "good steps");
  const double norm_sq = ScalarValue(*ctx.inputs[2], "loss_scale_update", "norm_sq");
  const double window = static_cast<double>(ctx.attrs.GetInt("window", 1000));
  const double min_scale = ctx.attrs.GetDouble("min_scale", 1);
  double next_scale = scale, next_good = good + 1;
  if (!std::isfinite(norm_sq)) {
    next_scale = scale / 2 < min_scale ? min_scale : scale / 2;  // a NaN scale stays NaN
    next_good = 0;
  } else if (next_good >= window) {
    next_scale = scale * 2;
    next_good = 0;
  }
  ctx.outputs[0]->SetDouble(0, next_scale);
  ctx.outputs[1]->SetDouble(0, next_good);
}

void LrSchedule(const KernelContext& ctx) {
  CheckArity(ctx, 2, 1, "lr_schedule");
  const double step = ScalarValue(*ctx.inputs[0], "lr_schedule", "step");
  const double base = ScalarValue(*ctx.inputs[1], "lr_schedule", "base_lr");
  ctx.outputs[0]->SetDouble(
      0, ScheduledLearningRate(base, step, LrDecayAttr(ctx.attrs), ctx.attrs.GetDouble("warmup", 0),
                               ctx.attrs.GetDouble("decay_steps", 0),
                               ctx.attrs.GetDouble("min_lr", 0)));
}

}  // namespace

void RegisterGradControlKernels(KernelRegistry& registry) {
  RegisterCpu(registry, "sum_squares", {DType::kF32}, SumSquares);
  RegisterCpu(registry, "grad_factor", {DType::kF32}, GradFactor);
  RegisterCpu(registry, "loss_scale_update", {DType::kF32}, LossScaleUpdate);
  RegisterCpu(registry, "lr_schedule", {DType::kF32}, LrSchedule);
}

}  // namespace twinflow::kernels
