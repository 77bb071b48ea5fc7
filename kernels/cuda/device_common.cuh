#pragma once
// Device helpers shared by the .cu files: the 16-bit types, loads and stores that convert
// through an accumulator type, grid-stride loops, a deterministic block reduction, and reads
// of i32/i64 index tensors.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "engine/core/dtype.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_types.h"

namespace twinflow::kernels::cuda {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 256;  // every kernel's block size; a multiple of the warp size

// Blocks for a grid-stride loop over n items (n > 0): enough to fill the device, capped so
// the grid is always a valid launch.
inline unsigned BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
}
inline unsigned RowBlocks(int64_t rows) {
  return static_cast<unsigned>(rows < 65535 ? rows : 65535);
}

#define TF_GRID_LOOP(i, n)                                                               \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
#define TF_ROW_LOOP(r, rows) for (int64_t r = blockIdx.x; r < (rows); r += gridDim.x)

// Where element i (row-major over the box's extents) is read and written.
__device__ __forceinline__ void BoxOffsets(const BoxCopy& b, int64_t i, int64_t* from,
                                           int64_t* to) {
  *from = b.src_offset;
  *to = b.dst_offset;
  for (int d = b.rank - 1; d >= 0; --d) {
    const int64_t idx = i % b.extent[d];
    i /= b.extent[d];
    *from += idx * b.src_stride[d];
    *to += idx * b.dst_stride[d];
  }
}

// Accumulation type: f32 accumulates in double as the CPU kernels do, bf16 in float, integers
// in uint64_t (wrapping like two's complement).
template <typename T>
struct AccOf {
  using type = uint64_t;
};
template <>
struct AccOf<float> {
  using type = double;
};
template <>
struct AccOf<bf16> {
  using type = float;
};
template <typename T>
using Acc = typename AccOf<T>::type;

// Arithmetic type of elementwise ops: float for f32 and bf16 (bf16 is only storage).
template <typename T>
__device__ __forceinline__ float ToFloat(T v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ float ToFloat<bf16>(bf16 v) {
  return __bfloat162float(v);
}

template <typename A, typename T>
__device__ __forceinline__ A LoadAs(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, bf16>) {
    return static_cast<A>(__bfloat162float(p[i]));
  } else {
    return static_cast<A>(p[i]);
  }
}

// Stores v rounded to T; a double goes through float first, as Tensor::SetDouble does for bf16.
template <typename T, typename V>
__device__ __forceinline__ void StoreAs(T* p, int64_t i, V v) {
  if constexpr (std::is_same_v<T, bf16>) {
    p[i] = __float2bfloat16_rn(static_cast<float>(v));
  } else {
    p[i] = static_cast<T>(v);
  }
}

// Saturating conversion to an integer type, NaN to 0 (the CPU kernels' rule).
template <typename I>
__device__ __forceinline__ I SaturateTo(double v) {
  constexpr double lo = static_cast<double>(std::is_same_v<I, int32_t> ? INT32_MIN : INT64_MIN);
  constexpr double hi = static_cast<double>(std::is_same_v<I, int32_t> ? INT32_MAX : INT64_MAX);
  if (v != v) return 0;
  if (v <= lo) return std::is_same_v<I, int32_t> ? INT32_MIN : INT64_MIN;
  if (v >= hi) return std::is_same_v<I, int32_t> ? INT32_MAX : INT64_MAX;
  return static_cast<I>(v);
}

// Element i of a tensor of a run-time dtype, as double (exact but for i64 beyond 2^53).
__device__ __forceinline__ double LoadDouble(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kF32:
      return static_cast<const float*>(p)[i];
    case DType::kF64:
      return static_cast<const double*>(p)[i];
    case DType::kI32:
      return static_cast<double>(static_cast<const int32_t*>(p)[i]);
    case DType::kI64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kBF16:
      return __bfloat162float(static_cast<const bf16*>(p)[i]);
    case DType::kF16:
      return __half2float(static_cast<const __half*>(p)[i]);
  }
  return 0;
}

__device__ __forceinline__ void StoreDouble(void* p, DType t, int64_t i, double v) {
  switch (t) {
    case DType::kF32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      return;
    case DType::kF64:
      static_cast<double*>(p)[i] = v;
      return;
    case DType::kI32:
      static_cast<int32_t*>(p)[i] = SaturateTo<int32_t>(v);
      return;
    case DType::kI64:
      static_cast<int64_t*>(p)[i] = SaturateTo<int64_t>(v);
      return;
    case DType::kBF16:
      static_cast<bf16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v));
      return;
    case DType::kF16:
      static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v));
      return;
  }
}

// Element i of an i32 (is64 false) or i64 index tensor.
__device__ __forceinline__ int64_t LoadIndex(const void* p, bool is64, int64_t i) {
  return is64 ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
}

// Records the first fault of the run in the env's mapped flag (later ones keep it).
__device__ __forceinline__ void RaiseFault(int* flag, int code) {
  if (flag != nullptr) atomicCAS(flag, 0, code);
}

// Max that lets a NaN win and stay (reduce_max's rule).
template <typename A>
__device__ __forceinline__ A MaxKeepNan(A a, A b) {
  if (a != a) return a;
  if (b != b) return b;
  return b > a ? b : a;
}

struct SumOp {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return a + b;
  }
};
struct MaxOp {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return MaxKeepNan(a, b);
  }
};

// Reduces one value per thread over the block (blockDim.x == kThreads) in a fixed tree order,
// so the result depends only on the inputs: deterministic, no atomics. Every thread gets it.
template <typename A, typename Op>
__device__ A BlockReduce(A v, Op op, A identity) {
  __shared__ A partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset >>= 1)
    v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < kThreads / 32 ? partial[lane] : identity;
  if (warp == 0) {
    for (int offset = 16; offset > 0; offset >>= 1) {
      v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
    }
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  const A result = partial[0];
  __syncthreads();  // partial may be reused by the next call
  return result;
}

}  // namespace twinflow::kernels::cuda
