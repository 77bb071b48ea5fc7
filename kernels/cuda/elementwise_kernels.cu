// Device code of the broadcasting binary ops: one thread per output element (grid-stride),
// operand offsets from the per-axis strides of a Strides3 passed by value.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/elementwise_launch.h"

namespace twinflow::kernels::cuda {
namespace {

template <typename T>
__device__ __forceinline__ T Apply(BinaryOp op, T a, T b, double scale) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;  // wraps instead of overflowing
    const U ua = static_cast<U>(a), ub = static_cast<U>(b);
    switch (op) {
      case BinaryOp::kAdd:
        return static_cast<T>(static_cast<U>(ua + ub));
      case BinaryOp::kSub:
        return static_cast<T>(static_cast<U>(ua - ub));
      case BinaryOp::kMul:
        return static_cast<T>(static_cast<U>(ua * ub));
      default:
        return a;  // no integer div or scale is registered
    }
  } else {
    const float x = ToFloat(a), y = ToFloat(b);
    float r = x;
    switch (op) {
      case BinaryOp::kAdd:
        r = x + y;
        break;
      case BinaryOp::kSub:
        r = x - y;
        break;
      case BinaryOp::kMul:
        r = x * y;
        break;
      case BinaryOp::kDiv:
        r = x / y;
        break;
      case BinaryOp::kFirst:
        break;
      case BinaryOp::kScaleFirst:
        r = x * static_cast<float>(scale);
        break;
    }
    T out;
    StoreAs(&out, 0, r);
    return out;
  }
}

template <typename T>
__global__ void BinaryKernel(BinaryOp op, const T* a, const T* b, T* out, int64_t n, Strides3 s,
                             double scale) {
  TF_GRID_LOOP(i, n) {
    int64_t oa = i, ob = i;
    if (!s.contiguous) {
      oa = 0;
      ob = 0;
      int64_t rest = i;
      for (int d = s.rank - 1; d >= 0; --d) {
        const int64_t idx = rest % s.extent[d];
        rest /= s.extent[d];
        oa += idx * s.stride[0][d];
        ob += idx * s.stride[1][d];
      }
    }
    out[i] = Apply<T>(op, a[oa], b == nullptr ? a[oa] : b[ob], scale);
  }
}

template <typename T>
void Launch(BinaryOp op, const void* a, const void* b, void* out, int64_t n, const Strides3& s,
            double scale, cudaStream_t stream) {
  BinaryKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
      op, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), n, s, scale);
  TF_CUDA_CHECK_LAUNCH("BinaryKernel");
}

}  // namespace

void LaunchBinary(BinaryOp op, DType dtype, const void* a, const void* b, void* out, int64_t n,
                  const Strides3& space, double scale, cudaStream_t stream) {
  if (n == 0) return;
  switch (dtype) {
    case DType::kF32:
      return Launch<float>(op, a, b, out, n, space, scale, stream);
    case DType::kBF16:
      return Launch<bf16>(op, a, b, out, n, space, scale, stream);
    case DType::kI32:
      return Launch<int32_t>(op, a, b, out, n, space, scale, stream);
    case DType::kI64:
      return Launch<int64_t>(op, a, b, out, n, space, scale, stream);
    default:
      return;  // the host side registers only these dtypes
  }
}

}  // namespace twinflow::kernels::cuda
