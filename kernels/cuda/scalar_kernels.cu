// Device code of the scalar ops and cast: one thread per element, dtypes chosen at run time.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/scalar_launch.h"

namespace twinflow::kernels::cuda {
namespace {

__global__ void ScalarKernel(ScalarOp op, DType dtype, const void* x, void* out, int64_t n,
                             double value) {
  TF_GRID_LOOP(i, n) {
    const double v = LoadDouble(x, dtype, i);
    const double r = op == ScalarOp::kAdd   ? v + value
                     : op == ScalarOp::kMul ? v * value
                                            : pow(v, value);
    StoreDouble(out, dtype, i, r);
  }
}

__device__ __forceinline__ bool IsInteger(DType t) { return t == DType::kI32 || t == DType::kI64; }

__global__ void CastKernel(DType from, DType to, const void* x, void* out, int64_t n) {
  TF_GRID_LOOP(i, n) {
    if (IsInteger(from) && IsInteger(to)) {
      const int64_t v = from == DType::kI64 ? static_cast<const int64_t*>(x)[i]
                                            : static_cast<const int32_t*>(x)[i];
      if (to == DType::kI64) {
        static_cast<int64_t*>(out)[i] = v;
      } else {
        static_cast<int32_t*>(out)[i] = static_cast<int32_t>(v);  // modulo 2^32
      }
    } else {
      StoreDouble(out, to, i, LoadDouble(x, from, i));
    }
  }
}

}  // namespace

void LaunchScalar(ScalarOp op, DType dtype, const void* x, void* out, int64_t n, double value,
                  cudaStream_t stream) {
  if (n == 0) return;
  ScalarKernel<<<BlocksFor(n), kThreads, 0, stream>>>(op, dtype, x, out, n, value);
  TF_CUDA_CHECK_LAUNCH("ScalarKernel");
}

void LaunchCast(DType from, DType to, const void* x, void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  CastKernel<<<BlocksFor(n), kThreads, 0, stream>>>(from, to, x, out, n);
  TF_CUDA_CHECK_LAUNCH("CastKernel");
}

}  // namespace twinflow::kernels::cuda
