#pragma once
// Launchers of grad_control_kernels.cu: gradient clipping and loss scaling on the device,
// formulas as the CPU kernels (kernels/cpu/grad_control_kernels.cc). Scalars stay in device
// memory: the host never waits for them.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace twinflow::kernels::cuda {

// The blocks of the sum of squares' first pass (a constant, so the sum's order never depends
// on the GPU).
constexpr int kSumSquaresBlocks = 1024;
// out[0] = sum of g[i]^2 over n f32 elements, in double, in a fixed order: each of
// kSumSquaresBlocks blocks sums its contiguous chunk into `partials` (device memory of that
// many doubles), then one block sums those.
void LaunchSumSquares(const float* g, int64_t n, double* partials, float* out, cudaStream_t stream);
// out[0] = the gradient factor from norm_sq[0] and scale[0] (null: 1); max_norm 0: no clip.
void LaunchGradFactor(const float* norm_sq, const float* scale, double max_norm, float* out,
                      cudaStream_t stream);
// (scale', good') from (scale, good, norm_sq): halve on overflow (not below min_scale), double
// after `window` good steps.
void LaunchLossScaleUpdate(const float* scale, const float* good, const float* norm_sq,
                           int64_t window, double min_scale, float* scale_out, float* good_out,
                           cudaStream_t stream);

// A schedule's attrs; decay is an LrDecay (engine/core/lr_schedule.h) as int.
struct LrScheduleArgs {
  int decay = 0;
  double warmup = 0, decay_steps = 0, min_lr = 0;
};
// out = ScheduledLearningRate(base_lr, step, ...), one thread.
void LaunchLrSchedule(const float* step, const float* base_lr, const LrScheduleArgs& args,
                      float* out, cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
