#pragma once
// The learning rate of a step under a schedule, in one place for the CPU and CUDA kernels of
// lr_schedule (engine/ops/grad_control_ops.cc). The shapes are Megatron-LM's
// (--lr-warmup-iters, --lr-decay-style, --lr-decay-iters, --min-lr): after `step` completed
// steps, a linear warmup base * step / warmup while step < warmup, then constant, or a linear or
// cosine decay from base to min_lr over steps [warmup, decay_steps], and min_lr after.
#include <cmath>
#include <cstdint>

#include "engine/core/host_device.h"

namespace twinflow {

enum class LrDecay : int { kConstant = 0, kLinear = 1, kCosine = 2 };

TWINFLOW_HOST_DEVICE double ScheduledLearningRate(double base, double step, LrDecay decay,
                                                  double warmup, double decay_steps,
                                                  double min_lr) {
  if (warmup > 0 && step < warmup) return base * step / warmup;
  if (decay == LrDecay::kConstant) return base;
  if (step >= decay_steps) return min_lr;
  const double progress = (step - warmup) / (decay_steps - warmup);
  const double kept = decay == LrDecay::kLinear ? 1 - progress : 0.5 * (1 + cos(M_PI * progress));
  return min_lr + (base - min_lr) * kept;
}

}  // namespace twinflow
