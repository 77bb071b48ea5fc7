// dst = op(dst, src) on the device, one thread per element (grid-stride), for every dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/reduce_into_launch.h"

namespace twinflow::kernels::cuda {
namespace {

// Compute in float for the 16-bit types, natively otherwise.
template <typename T>
struct Wide {
  using type = T;
  __device__ static T In(T v) { return v; }
  __device__ static T Out(T v) { return v; }
};
template <>
struct Wide<__nv_bfloat16> {
  using type = float;
  __device__ static float In(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 Out(float v) { return __float2bfloat16_rn(v); }
};
template <>
struct Wide<__half> {
  using type = float;
  __device__ static float In(__half v) { return __half2float(v); }
  __device__ static __half Out(float v) { return __float2half_rn(v); }
};

// As the host's MaxKeepingNan / MinKeepingNan: a NaN on either side wins.
template <typename W>
__device__ W Combine(W a, W b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return a + b;
    case ReduceOp::kMax:
      return a < b || b != b ? b : a;
    case ReduceOp::kMin:
      return b < a || b != b ? b : a;
  }
  return a;
}

template <typename T>
__global__ void ReduceIntoKernel(T* dst, const T* src, int64_t n, ReduceOp op) {
  using W = Wide<T>;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = W::Out(Combine(W::In(dst[i]), W::In(src[i]), op));
  }
}

template <typename T>
void Launch(void* dst, const void* src, int64_t n, ReduceOp op, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
  ReduceIntoKernel<T>
      <<<grid, kThreads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), n, op);
  TF_CUDA_CHECK_LAUNCH("ReduceIntoKernel");
}

}  // namespace

void LaunchReduceInto(void* dst, const void* src, int64_t n, DType dtype, ReduceOp op,
                      cudaStream_t stream) {
  if (n == 0) return;
  switch (dtype) {
    case DType::kF32:
      return Launch<float>(dst, src, n, op, stream);
    case DType::kF64:
      return Launch<double>(dst, src, n, op, stream);
    case DType::kI32:
      return Launch<int32_t>(dst, src, n, op, stream);
    case DType::kI64:
      return Launch<int64_t>(dst, src, n, op, stream);
    case DType::kBF16:
      return Launch<__nv_bfloat16>(dst, src, n, op, stream);
    case DType::kF16:
      return Launch<__half>(dst, src, n, op, stream);
  }
}

}  // namespace twinflow::kernels::cuda
