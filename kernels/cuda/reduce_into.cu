// dst = op(dst, src) on the device, one thread per element (grid-stride), for every dtype: over
// contiguous elements, or over a box of each (a region of a row-major tensor).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/device_common.cuh"
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

// Element i of the n is at i on both sides (contiguous) or where the box puts it.
struct Contiguous {
  __device__ void At(int64_t i, int64_t* from, int64_t* to) const { *from = *to = i; }
};
struct Boxed {
  BoxCopy box;
  __device__ void At(int64_t i, int64_t* from, int64_t* to) const { BoxOffsets(box, i, from, to); }
};

template <typename T, typename Where>
__global__ void ReduceIntoKernel(T* dst, const T* src, int64_t n, ReduceOp op, Where where) {
  using W = Wide<T>;
  TF_GRID_LOOP(i, n) {
    int64_t from = 0, to = 0;
    where.At(i, &from, &to);
    dst[to] = W::Out(Combine(W::In(dst[to]), W::In(src[from]), op));
  }
}

template <typename T, typename Where>
void Launch(void* dst, const void* src, int64_t n, ReduceOp op, Where where, cudaStream_t stream) {
  ReduceIntoKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
      static_cast<T*>(dst), static_cast<const T*>(src), n, op, where);
  TF_CUDA_CHECK_LAUNCH("ReduceIntoKernel");
}

template <typename Where>
void LaunchFor(void* dst, const void* src, int64_t n, DType dtype, ReduceOp op, Where where,
               cudaStream_t stream) {
  if (n == 0) return;
  switch (dtype) {
    case DType::kF32:
      return Launch<float>(dst, src, n, op, where, stream);
    case DType::kF64:
      return Launch<double>(dst, src, n, op, where, stream);
    case DType::kI32:
      return Launch<int32_t>(dst, src, n, op, where, stream);
    case DType::kI64:
      return Launch<int64_t>(dst, src, n, op, where, stream);
    case DType::kBF16:
      return Launch<__nv_bfloat16>(dst, src, n, op, where, stream);
    case DType::kF16:
      return Launch<__half>(dst, src, n, op, where, stream);
  }
}

}  // namespace

void LaunchReduceInto(void* dst, const void* src, int64_t n, DType dtype, ReduceOp op,
                      cudaStream_t stream) {
  LaunchFor(dst, src, n, dtype, op, Contiguous{}, stream);
}

void LaunchReduceBoxInto(void* dst, const void* src, const BoxCopy& box, DType dtype, ReduceOp op,
                         cudaStream_t stream) {
  int64_t n = 1;
  for (int d = 0; d < box.rank; ++d) n *= box.extent[d];
  LaunchFor(dst, src, n, dtype, op, Boxed{box}, stream);
}

}  // namespace twinflow::kernels::cuda
