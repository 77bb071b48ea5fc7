// Device code of the reductions. Each output element is reduced by one block: thread t
// accumulates elements t, t + 256, ... in order, then a fixed shuffle tree combines the
// threads. No atomics, so reruns are bit-identical.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/reduction_launch.h"

namespace twinflow::kernels::cuda {
namespace {

template <typename T, typename Op>
__global__ void ReduceKernel(Op op, const T* in, T* out, ReduceSpace s, Acc<T> identity,
                             double scale) {
  TF_ROW_LOOP(o, s.outputs) {
    int64_t base = 0, rest = o;
    for (int d = s.kept_rank - 1; d >= 0; --d) {
      base += (rest % s.kept_extent[d]) * s.kept_stride[d];
      rest /= s.kept_extent[d];
    }
    Acc<T> acc = identity;
    for (int64_t r = threadIdx.x; r < s.count; r += blockDim.x) {
      int64_t offset = base, left = r;
      for (int d = s.reduced_rank - 1; d >= 0; --d) {
        offset += (left % s.reduced_extent[d]) * s.reduced_stride[d];
        left /= s.reduced_extent[d];
      }
      acc = op(acc, LoadAs<Acc<T>>(in, offset));
    }
    acc = BlockReduce(acc, op, identity);
    if (threadIdx.x == 0) {
      if constexpr (std::is_integral_v<T>) {
        out[o] = static_cast<T>(acc);
      } else {
        StoreAs(out, o, scale == 1.0 ? acc : static_cast<Acc<T>>(acc * scale));
      }
    }
  }
}

template <typename T>
void Launch(ReduceKind kind, const void* in, void* out, const ReduceSpace& s, double scale,
            cudaStream_t stream) {
  const T* src = static_cast<const T*>(in);
  T* dst = static_cast<T*>(out);
  if constexpr (std::is_integral_v<T>) {
    ReduceKernel<T><<<RowBlocks(s.outputs), kThreads, 0, stream>>>(SumOp{}, src, dst, s, 0, 1.0);
  } else if (kind == ReduceKind::kSum) {
    ReduceKernel<T>
        <<<RowBlocks(s.outputs), kThreads, 0, stream>>>(SumOp{}, src, dst, s, Acc<T>(0), scale);
  } else {
    ReduceKernel<T><<<RowBlocks(s.outputs), kThreads, 0, stream>>>(
        MaxOp{}, src, dst, s, -static_cast<Acc<T>>(INFINITY), 1.0);
  }
  TF_CUDA_CHECK_LAUNCH("ReduceKernel");
}

template <typename T>
__global__ void ReduceMaxGradKernel(const T* x, const T* y, const T* dy, T* dx, int64_t n,
                                    Strides3 s) {
  TF_GRID_LOOP(i, n) {
    int64_t r = 0, rest = i;
    for (int d = s.rank - 1; d >= 0; --d) {
      r += (rest % s.extent[d]) * s.stride[0][d];
      rest /= s.extent[d];
    }
    const float xv = ToFloat(x[i]), yv = ToFloat(y[r]), g = ToFloat(dy[r]);
    float v;
    if (xv == yv) {
      v = g;
    } else if (xv != xv || yv != yv) {
      v = xv + yv;  // NaN: the mask is undefined
    } else {
      v = g * 0.0f + 0.0f;  // keeps a NaN or infinite dy visible
    }
    StoreAs(dx, i, v);
  }
}

}  // namespace

void LaunchReduce(ReduceKind kind, DType dtype, const void* in, void* out, const ReduceSpace& space,
                  double scale, cudaStream_t stream) {
  if (space.outputs == 0) return;
  switch (dtype) {
    case DType::kF32:
      return Launch<float>(kind, in, out, space, scale, stream);
    case DType::kBF16:
      return Launch<bf16>(kind, in, out, space, scale, stream);
    case DType::kI32:
      return Launch<int32_t>(kind, in, out, space, scale, stream);
    case DType::kI64:
      return Launch<int64_t>(kind, in, out, space, scale, stream);
    default:
      return;
  }
}

void LaunchReduceMaxGrad(DType dtype, const void* x, const void* y, const void* dy, void* dx,
                         int64_t n, const Strides3& space, cudaStream_t stream) {
  if (n == 0) return;
  if (dtype == DType::kF32) {
    ReduceMaxGradKernel<float><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<const float*>(y), static_cast<const float*>(dy),
        static_cast<float*>(dx), n, space);
  } else {
    ReduceMaxGradKernel<bf16><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<const bf16*>(x), static_cast<const bf16*>(y), static_cast<const bf16*>(dy),
        static_cast<bf16*>(dx), n, space);
  }
  TF_CUDA_CHECK_LAUNCH("ReduceMaxGradKernel");
}

}  // namespace twinflow::kernels::cuda
