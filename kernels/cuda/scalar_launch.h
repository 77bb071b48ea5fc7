#pragma once
// Launchers of scalar_kernels.cu: scalar_add, scalar_mul, scalar_pow and cast, all computed
// through double on a dtype chosen at run time (one kernel, no per-dtype instantiations).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"

namespace twinflow::kernels::cuda {

enum class ScalarOp { kAdd, kMul, kPow };

// out = op(x, value) in double, stored back to `dtype` (integers saturate, NaN to 0).
void LaunchScalar(ScalarOp op, DType dtype, const void* x, void* out, int64_t n, double value,
                  cudaStream_t stream);

// out = x converted from `from` to `to`: integer to integer modulo 2^n, anything else through
// double (to integers truncating and saturating, NaN to 0; to bf16/f16 through float).
void LaunchCast(DType from, DType to, const void* x, void* out, int64_t n, cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
