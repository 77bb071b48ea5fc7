// Device code of the softmax family: one block per row, row statistics (max, sum of
// exponentials, dot products) reduced by BlockReduce in a fixed order; f32 rows accumulate in
// double, bf16 rows in float.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/softmax_launch.h"

namespace twinflow::kernels::cuda {
namespace {

// fmax ignores a NaN, as std::fmax in the CPU kernels; the NaN then reaches the sum.
struct FmaxOp {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return fmax(a, b);
  }
};

template <typename T>
__device__ Acc<T> RowMax(const T* x, int64_t base, int64_t n, int64_t stride) {
  using A = Acc<T>;
  A m = -static_cast<A>(INFINITY);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
    m = fmax(m, LoadAs<A>(x, base + j * stride));
  return BlockReduce(m, FmaxOp{}, -static_cast<A>(INFINITY));
}

template <typename T>
__device__ Acc<T> RowExpSum(const T* x, int64_t base, int64_t n, int64_t stride, Acc<T> max) {
  using A = Acc<T>;
  A s = 0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
    s += exp(LoadAs<A>(x, base + j * stride) - max);
  return BlockReduce(s, SumOp{}, A(0));
}

// With the fusion's scale and causal mask: row r's keys at or after `kept` get exactly 0.
template <typename T>
__global__ void SoftmaxKernel(bool log_out, const T* x, T* y, RowView v, SoftmaxFusionArgs f) {
  using A = Acc<T>;
  const A scale = static_cast<A>(f.scale);
  TF_ROW_LOOP(r, v.outer * v.inner) {
    const int64_t base = (r / v.inner) * v.n * v.inner + r % v.inner;
    const int64_t kept = f.query_rows > 0 ? r % f.query_rows + 1 : v.n;
    A m = -static_cast<A>(INFINITY);
    for (int64_t j = threadIdx.x; j < kept; j += blockDim.x)
      m = fmax(m, scale * LoadAs<A>(x, base + j * v.inner));
    const A max = BlockReduce(m, FmaxOp{}, -static_cast<A>(INFINITY));
    A s = 0;
    for (int64_t j = threadIdx.x; j < kept; j += blockDim.x)
      s += exp(scale * LoadAs<A>(x, base + j * v.inner) - max);
    const A sum = BlockReduce(s, SumOp{}, A(0));
    const A log_sum = log(sum);
    for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) {
      const int64_t k = base + j * v.inner;
      const A z = scale * LoadAs<A>(x, k) - max;
      StoreAs(y, k, j >= kept ? A(0) : log_out ? z - log_sum : exp(z) / sum);
    }
  }
}

template <typename T>
__global__ void SoftmaxGradKernel(bool log_out, const T* y, const T* dy, T* dx, RowView v,
                                  double scale_arg) {
  using A = Acc<T>;
  const A scale = static_cast<A>(scale_arg);
  TF_ROW_LOOP(r, v.outer * v.inner) {
    const int64_t base = (r / v.inner) * v.n * v.inner + r % v.inner;
    A acc = 0;  // softmax: sum(dy * y); log_softmax: sum(dy)
    for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) {
      const int64_t k = base + j * v.inner;
      acc += log_out ? LoadAs<A>(dy, k) : LoadAs<A>(dy, k) * LoadAs<A>(y, k);
    }
    acc = BlockReduce(acc, SumOp{}, A(0));
    for (int64_t j = threadIdx.x; j < v.n; j += blockDim.x) {
      const int64_t k = base + j * v.inner;
      const A yk = LoadAs<A>(y, k), g = LoadAs<A>(dy, k);
      StoreAs(dx, k, log_out ? g - exp(yk) * acc : scale * yk * (g - acc));
    }
  }
}

template <typename T>
__global__ void SparseXentKernel(const T* x, const void* labels, bool labels64, const T* dloss,
                                 T* out, int64_t rows, int64_t classes) {
  using A = Acc<T>;
  TF_ROW_LOOP(r, rows) {
    const int64_t label = LoadIndex(labels, labels64, r);
    const bool valid = label >= 0 && label < classes;
    const A max = RowMax(x, r * classes, classes, 1);
    const A sum = RowExpSum(x, r * classes, classes, 1, max);
    const A nan = static_cast<A>(NAN);
    if (dloss == nullptr) {
      if (threadIdx.x == 0) {
        StoreAs(out, r, valid ? log(sum) + max - LoadAs<A>(x, r * classes + label) : nan);
      }
      continue;
    }
    const A g = LoadAs<A>(dloss, r);
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const A p = exp(LoadAs<A>(x, r * classes + c) - max) / sum;
      StoreAs(out, r * classes + c, valid ? (p - (c == label ? A(1) : A(0))) * g : nan);
    }
  }
}

__global__ void CheckIndicesKernel(const void* indices, bool is64, int64_t n, int64_t limit,
                                   int* flag, int code) {
  TF_GRID_LOOP(i, n) {
    const int64_t v = LoadIndex(indices, is64, i);
    if (v < 0 || v >= limit) RaiseFault(flag, code);
  }
}

template <typename T>
const T* In(const void* p) {
  return static_cast<const T*>(p);
}

}  // namespace

void LaunchSoftmax(bool log, DType dtype, const void* x, void* y, const RowView& v,
                   const SoftmaxFusionArgs& fusion, cudaStream_t stream) {
  const int64_t rows = v.outer * v.inner;
  if (rows == 0 || v.n == 0) return;
  if (dtype == DType::kF32) {
    SoftmaxKernel<<<RowBlocks(rows), kThreads, 0, stream>>>(log, In<float>(x),
                                                            static_cast<float*>(y), v, fusion);
  } else {
    SoftmaxKernel<<<RowBlocks(rows), kThreads, 0, stream>>>(log, In<bf16>(x), static_cast<bf16*>(y),
                                                            v, fusion);
  }
  TF_CUDA_CHECK_LAUNCH("SoftmaxKernel");
}

void LaunchSoftmaxGrad(bool log, DType dtype, const void* y, const void* dy, void* dx,
                       const RowView& v, double scale, cudaStream_t stream) {
  const int64_t rows = v.outer * v.inner;
  if (rows == 0 || v.n == 0) return;
  if (dtype == DType::kF32) {
    SoftmaxGradKernel<<<RowBlocks(rows), kThreads, 0, stream>>>(log, In<float>(y), In<float>(dy),
                                                                static_cast<float*>(dx), v, scale);
  } else {
    SoftmaxGradKernel<<<RowBlocks(rows), kThreads, 0, stream>>>(log, In<bf16>(y), In<bf16>(dy),
                                                                static_cast<bf16*>(dx), v, scale);
  }
  TF_CUDA_CHECK_LAUNCH("SoftmaxGradKernel");
}

void LaunchSparseXent(DType dtype, const void* logits, const void* labels, bool labels64,
                      const void* dloss, void* out, int64_t rows, int64_t classes,
                      cudaStream_t stream) {
  if (rows == 0) return;
  if (dtype == DType::kF32) {
    SparseXentKernel<<<RowBlocks(rows), kThreads, 0, stream>>>(
        In<float>(logits), labels, labels64, In<float>(dloss), static_cast<float*>(out), rows,
        classes);
  } else {
    SparseXentKernel<<<RowBlocks(rows), kThreads, 0, stream>>>(
        In<bf16>(logits), labels, labels64, In<bf16>(dloss), static_cast<bf16*>(out), rows,
        classes);
  }
  TF_CUDA_CHECK_LAUNCH("SparseXentKernel");
}

void LaunchCheckIndices(const void* indices, bool is64, int64_t n, int64_t limit, int* flag,
                        int code, cudaStream_t stream) {
  if (n == 0) return;
  CheckIndicesKernel<<<BlocksFor(n), kThreads, 0, stream>>>(indices, is64, n, limit, flag, code);
  TF_CUDA_CHECK_LAUNCH("CheckIndicesKernel");
}

}  // namespace twinflow::kernels::cuda
