// Device code of the misc family: fills, seeded initialisation, causal mask, dropout. One
// thread per element; the element's logical index comes from its physical index and region.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/hash_random.cuh"
#include "kernels/cuda/misc_launch.h"

namespace twinflow::kernels::cuda {
namespace {

__device__ __forceinline__ int64_t LogicalIndex(const LogicalIndexer& ix, int64_t i) {
  int64_t flat = 0, rest = i;
  for (int d = ix.rank - 1; d >= 0; --d) {
    flat += (ix.begin[d] + rest % ix.extent[d]) * ix.logical_stride[d];
    rest /= ix.extent[d];
  }
  return flat;
}

int64_t Count(const LogicalIndexer& ix) {
  int64_t n = 1;
  for (int d = 0; d < ix.rank; ++d) n *= ix.extent[d];
  return n;
}

__global__ void FillKernel(DType dtype, void* out, int64_t n, double value) {
  TF_GRID_LOOP(i, n) StoreDouble(out, dtype, i, value);
}

__global__ void RandomInitKernel(RandomInit init, DType dtype, void* out, LogicalIndexer ix,
                                 int64_t n, uint64_t seed, double scale) {
  TF_GRID_LOOP(i, n) {
    const uint64_t at = static_cast<uint64_t>(LogicalIndex(ix, i));
    const double v = init == RandomInit::kNormal ? scale * HashNormal(seed, at)
                                                 : scale * (2 * HashUniform(seed, at) - 1);
    StoreDouble(out, dtype, i, v);
  }
}

__global__ void CausalMaskKernel(DType dtype, void* out, LogicalIndexer ix, int64_t n,
                                 int64_t cols) {
  TF_GRID_LOOP(i, n) {
    const int64_t at = LogicalIndex(ix, i);
    StoreDouble(out, dtype, i, at % cols > at / cols ? -1e9 : 0.0);
  }
}

template <typename T>
__global__ void DropoutKernel(const T* x, T* y, LogicalIndexer ix, int64_t n, double rate,
                              float keep_scale, uint64_t seed) {
  TF_GRID_LOOP(i, n) {
    const bool keep = HashUniform(seed, static_cast<uint64_t>(LogicalIndex(ix, i))) >= rate;
    const float v = ToFloat(x[i]);
    StoreAs(y, i, keep ? v * keep_scale : v * 0.0f + 0.0f);  // a NaN is never dropped
  }
}

}  // namespace

void LaunchFill(DType dtype, void* out, int64_t n, double value, cudaStream_t stream) {
  if (n == 0) return;
  FillKernel<<<BlocksFor(n), kThreads, 0, stream>>>(dtype, out, n, value);
  TF_CUDA_CHECK_LAUNCH("FillKernel");
}

void LaunchRandomInit(RandomInit init, DType dtype, void* out, const LogicalIndexer& ix,
                      uint64_t seed, double scale, cudaStream_t stream) {
  const int64_t n = Count(ix);
  if (n == 0) return;
  RandomInitKernel<<<BlocksFor(n), kThreads, 0, stream>>>(init, dtype, out, ix, n, seed, scale);
  TF_CUDA_CHECK_LAUNCH("RandomInitKernel");
}

void LaunchCausalMask(DType dtype, void* out, const LogicalIndexer& ix, int64_t cols,
                      cudaStream_t stream) {
  const int64_t n = Count(ix);
  if (n == 0) return;
  CausalMaskKernel<<<BlocksFor(n), kThreads, 0, stream>>>(dtype, out, ix, n, cols);
  TF_CUDA_CHECK_LAUNCH("CausalMaskKernel");
}

void LaunchDropout(DType dtype, const void* x, void* y, const LogicalIndexer& ix, double rate,
                   uint64_t seed, cudaStream_t stream) {
  const int64_t n = Count(ix);
  if (n == 0) return;
  const float keep_scale = static_cast<float>(1.0 / (1.0 - rate));
  if (dtype == DType::kF32) {
    DropoutKernel<<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<float*>(y), ix, n, rate, keep_scale, seed);
  } else {
    DropoutKernel<<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<const bf16*>(x), static_cast<bf16*>(y), ix, n, rate, keep_scale, seed);
  }
  TF_CUDA_CHECK_LAUNCH("DropoutKernel");
}

}  // namespace twinflow::kernels::cuda
