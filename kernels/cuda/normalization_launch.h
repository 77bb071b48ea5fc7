#pragma once
// Launchers of normalization_kernels.cu: layer_norm, rms_norm and their gradients (f32, bf16).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"

namespace twinflow::kernels::cuda {

void LaunchLayerNorm(DType dtype, const void* x, const void* gamma, const void* beta, void* y,
                     int64_t rows, int64_t width, double epsilon, cudaStream_t stream);

// `stats` is scratch for 2 * rows doubles (each row's mean and 1/sqrt(var + eps)), written by
// the row kernel and read by the column kernel that sums dgamma and dbeta in row order.
void LaunchLayerNormGrad(DType dtype, const void* x, const void* gamma, const void* dy, void* dx,
                         void* dgamma, void* dbeta, double* stats, int64_t rows, int64_t width,
                         double epsilon, cudaStream_t stream);

void LaunchRmsNorm(DType dtype, const void* x, const void* gamma, void* y, int64_t rows,
                   int64_t width, double epsilon, cudaStream_t stream);

// `stats` is scratch for `rows` doubles (each row's 1/sqrt(mean(x^2) + eps)), as above.
void LaunchRmsNormGrad(DType dtype, const void* x, const void* gamma, const void* dy, void* dx,
                       void* dgamma, double* stats, int64_t rows, int64_t width, double epsilon,
                       cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
