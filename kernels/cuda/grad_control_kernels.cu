// Device code of gradient clipping, loss scaling and the learning-rate schedule. The sum of
// squares is two passes over a fixed grid: kSumSquaresBlocks blocks each sum a fixed
// contiguous chunk in double (a fixed tree), then one block sums their partials in order, so
// the sum is deterministic and spread over the whole GPU (one block alone reads ~1 GB/s).
#include "engine/core/lr_schedule.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/grad_control_launch.h"

namespace twinflow::kernels::cuda {
namespace {

__global__ void SumSquaresPartialKernel(const float* g, int64_t n, double* partial) {
  const int64_t begin = n * blockIdx.x / gridDim.x, end = n * (blockIdx.x + 1) / gridDim.x;
  double acc = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) acc += double(g[i]) * g[i];
  acc = BlockReduce(acc, SumOp{}, 0.0);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void SumPartialsKernel(const double* partial, int count, float* out) {
  double acc = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partial[i];
  acc = BlockReduce(acc, SumOp{}, 0.0);
  if (threadIdx.x == 0) out[0] = static_cast<float>(acc);
}

__global__ void GradFactorKernel(const float* norm_sq, const float* scale, double max_norm,
                                 float* out) {
  const double s = scale ? scale[0] : 1.0;
  const double sq = norm_sq[0];
  double factor = nan("");
  if (isfinite(sq)) {
    factor = 1 / s;
    const double norm = sqrt(sq) / s;
    if (max_norm > 0) factor *= fmin(1.0, max_norm / (norm + 1e-6));
  }
  out[0] = static_cast<float>(factor);
}

__global__ void LossScaleUpdateKernel(const float* scale, const float* good, const float* norm_sq,
                                      int64_t window, double min_scale, float* scale_out,
                                      float* good_out) {
  double next_scale = scale[0], next_good = double(good[0]) + 1;
  if (!isfinite(norm_sq[0])) {
    next_scale = next_scale / 2 < min_scale ? min_scale : next_scale / 2;  // NaN stays NaN
    next_good = 0;
  } else if (next_good >= double(window)) {
    next_scale *= 2;
    next_good = 0;
  }
  scale_out[0] = static_cast<float>(next_scale);
  good_out[0] = static_cast<float>(next_good);
}

__global__ void LrScheduleKernel(const float* step, const float* base_lr, LrScheduleArgs a,
                                 float* out) {
  out[0] = static_cast<float>(ScheduledLearningRate(
      base_lr[0], step[0], static_cast<LrDecay>(a.decay), a.warmup, a.decay_steps, a.min_lr));
}

}  // namespace

void LaunchLrSchedule(const float* step, const float* base_lr, const LrScheduleArgs& args,
                      float* out, cudaStream_t stream) {
  LrScheduleKernel<<<1, 1, 0, stream>>>(step, base_lr, args, out);
  TF_CUDA_CHECK_LAUNCH("LrScheduleKernel");
}

void LaunchSumSquares(const float* g, int64_t n, double* partials, float* out,
                      cudaStream_t stream) {
  SumSquaresPartialKernel<<<kSumSquaresBlocks, kThreads, 0, stream>>>(g, n, partials);
  TF_CUDA_CHECK_LAUNCH("SumSquaresPartialKernel");
  SumPartialsKernel<<<1, kThreads, 0, stream>>>(partials, kSumSquaresBlocks, out);
  TF_CUDA_CHECK_LAUNCH("SumPartialsKernel");
}

void LaunchGradFactor(const float* norm_sq, const float* scale, double max_norm, float* out,
                      cudaStream_t stream) {
  GradFactorKernel<<<1, 1, 0, stream>>>(norm_sq, scale, max_norm, out);
  TF_CUDA_CHECK_LAUNCH("GradFactorKernel");
}

void LaunchLossScaleUpdate(const float* scale, const float* good, const float* norm_sq,
                           int64_t window, double min_scale, float* scale_out, float* good_out,
                           cudaStream_t stream) {
  LossScaleUpdateKernel<<<1, 1, 0, stream>>>(scale, good, norm_sq, window, min_scale, scale_out,
                                             good_out);
  TF_CUDA_CHECK_LAUNCH("LossScaleUpdateKernel");
}

}  // namespace twinflow::kernels::cuda
