#pragma once
// Launchers of normalization_kernels.cu: layer_norm, rms_norm and their gradients (f32, bf16).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"

namespace twinflow::kernels::cuda {

void LaunchLayerNorm(DType dtype, const void* x, const void* gamma, const void* beta, void* y,
                     int64_t rows, int64_t width, double epsilon, cudaStream_t stream);

// The gradients' column sums (dgamma, dbeta) run in kColumnChunks fixed chunks of rows, each
// summed in row order, then the chunks in order: deterministic, and spread over the GPU (one
// thread per column alone keeps 3 SMs busy for a width of 768).
constexpr int kColumnChunks = 128;

// Doubles of scratch the gradients need: each row's statistics (layer norm: mean and
// 1/sqrt(var + eps); rms norm: 1/sqrt(mean(x^2) + eps)), written by the row kernel, then the
// column sums' per-chunk partials.
inline int64_t LayerNormGradScratch(int64_t rows, int64_t width) {
  return 2 * rows + 2 * kColumnChunks * width;
}
inline int64_t RmsNormGradScratch(int64_t rows, int64_t width) {
  return rows + kColumnChunks * width;
}

// `stats`: scratch of LayerNormGradScratch doubles.
void LaunchLayerNormGrad(DType dtype, const void* x, const void* gamma, const void* dy, void* dx,
                         void* dgamma, void* dbeta, double* stats, int64_t rows, int64_t width,
                         double epsilon, cudaStream_t stream);

void LaunchRmsNorm(DType dtype, const void* x, const void* gamma, void* y, int64_t rows,
                   int64_t width, double epsilon, cudaStream_t stream);

// `stats`: scratch of RmsNormGradScratch doubles.
void LaunchRmsNormGrad(DType dtype, const void* x, const void* gamma, const void* dy, void* dx,
                       void* dgamma, double* stats, int64_t rows, int64_t width, double epsilon,
                       cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
