// Device code of the class-split cross-entropy ops. Out-of-range labels read nothing (the
// host's LaunchCheckIndices raises the fault); every other element is computed as on the CPU.
#include "kernels/cuda/class_split_launch.h"
#include "kernels/cuda/device_common.cuh"

namespace twinflow::kernels::cuda {
namespace {

// The column of row r's label in this slice, or -1 when the slice does not hold it.
__device__ __forceinline__ int64_t LabelColumn(const LabelSlice& s, int64_t r) {
  const int64_t label = LoadIndex(s.labels, s.is64, r);
  const bool mine = label >= s.begin && label < s.end && label - s.begin < s.width;
  return mine ? label - s.begin : -1;
}

template <typename T>
__global__ void PickKernel(const T* x, LabelSlice s, T* out, int64_t rows) {
  TF_GRID_LOOP(r, rows) {
    const int64_t c = LabelColumn(s, r);
    out[r] = c >= 0 ? x[r * s.width + c] : T(0.0f);
  }
}

template <typename T>
__global__ void PickGradKernel(const T* dy, LabelSlice s, T* out, int64_t rows) {
  TF_GRID_LOOP(i, rows * s.width) {
    const int64_t r = i / s.width;
    out[i] = LabelColumn(s, r) == i % s.width ? dy[r] : T(0.0f);
  }
}

template <typename T>
__global__ void ExpKernel(const T* x, const T* m, T* out, int64_t rows, int64_t width) {
  using A = Acc<T>;
  TF_GRID_LOOP(i, rows * width) StoreAs(out, i, exp(LoadAs<A>(x, i) - LoadAs<A>(m, i / width)));
}

template <typename T>
__global__ void ExpGradKernel(const T* e, const T* dy, T* dl, T* dm, int64_t rows, int64_t width) {
  using A = Acc<T>;
  TF_ROW_LOOP(r, rows) {
    A acc = 0;
    for (int64_t c = threadIdx.x; c < width; c += blockDim.x) {
      const A v = LoadAs<A>(dy, r * width + c) * LoadAs<A>(e, r * width + c);
      StoreAs(dl, r * width + c, v);
      acc += v;
    }
    acc = BlockReduce(acc, SumOp{}, A(0));
    if (threadIdx.x == 0) StoreAs(dm, r, -acc);
  }
}

template <typename T>
__global__ void LossKernel(const T* s, const T* m, const T* picked, T* out, int64_t n) {
  using A = Acc<T>;
  TF_GRID_LOOP(i, n) StoreAs(out, i, log(LoadAs<A>(s, i)) + LoadAs<A>(m, i) - LoadAs<A>(picked, i));
}

template <typename T>
__global__ void LossGradKernel(const T* s, const T* dy, T* ds, T* dm, T* dp, int64_t n) {
  TF_GRID_LOOP(i, n) {
    const float g = ToFloat(dy[i]);
    StoreAs(ds, i, g / ToFloat(s[i]));
    dm[i] = dy[i];
    StoreAs(dp, i, -g);
  }
}

// Runs launch(T{}) for f32 or bf16.
template <typename F>
void ForFloat(DType dtype, F launch) {
  if (dtype == DType::kF32) {
    launch(float{});
  } else {
    launch(bf16{});
  }
}

}  // namespace

#define TF_PTR(T, p) static_cast<const T*>(p)

void LaunchPickLabel(DType dtype, const void* logits, const LabelSlice& s, void* out, int64_t rows,
                     cudaStream_t stream) {
  if (rows == 0) return;
  ForFloat(dtype, [&](auto zero) {
    using T = decltype(zero);
    PickKernel<<<BlocksFor(rows), kThreads, 0, stream>>>(TF_PTR(T, logits), s, static_cast<T*>(out),
                                                         rows);
  });
  TF_CUDA_CHECK_LAUNCH("PickKernel");
}

void LaunchPickLabelGrad(DType dtype, const void* dy, const LabelSlice& s, void* out, int64_t rows,
                         cudaStream_t stream) {
  if (rows * s.width == 0) return;
  ForFloat(dtype, [&](auto zero) {
    using T = decltype(zero);
    PickGradKernel<<<BlocksFor(rows * s.width), kThreads, 0, stream>>>(TF_PTR(T, dy), s,
                                                                       static_cast<T*>(out), rows);
  });
  TF_CUDA_CHECK_LAUNCH("PickGradKernel");
}

void LaunchClassSplitExp(DType dtype, const void* logits, const void* m, void* out, int64_t rows,
                         int64_t width, cudaStream_t stream) {
  if (rows * width == 0) return;
  ForFloat(dtype, [&](auto zero) {
    using T = decltype(zero);
    ExpKernel<<<BlocksFor(rows * width), kThreads, 0, stream>>>(TF_PTR(T, logits), TF_PTR(T, m),
                                                                static_cast<T*>(out), rows, width);
  });
  TF_CUDA_CHECK_LAUNCH("ExpKernel");
}

void LaunchClassSplitExpGrad(DType dtype, const void* e, const void* dy, void* dlogits, void* dm,
                             int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows == 0) return;
  ForFloat(dtype, [&](auto zero) {
    using T = decltype(zero);
    ExpGradKernel<<<RowBlocks(rows), kThreads, 0, stream>>>(
        TF_PTR(T, e), TF_PTR(T, dy), static_cast<T*>(dlogits), static_cast<T*>(dm), rows, width);
  });
  TF_CUDA_CHECK_LAUNCH("ExpGradKernel");
}

void LaunchClassSplitLoss(DType dtype, const void* s, const void* m, const void* picked, void* out,
                          int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  ForFloat(dtype, [&](auto zero) {
    using T = decltype(zero);
    LossKernel<<<BlocksFor(n), kThreads, 0, stream>>>(TF_PTR(T, s), TF_PTR(T, m), TF_PTR(T, picked),
                                                      static_cast<T*>(out), n);
  });
  TF_CUDA_CHECK_LAUNCH("LossKernel");
}

void LaunchClassSplitLossGrad(DType dtype, const void* s, const void* dy, void* ds, void* dm,
                              void* dpicked, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  ForFloat(dtype, [&](auto zero) {
    using T = decltype(zero);
    LossGradKernel<<<BlocksFor(n), kThreads, 0, stream>>>(TF_PTR(T, s), TF_PTR(T, dy),
                                                          static_cast<T*>(ds), static_cast<T*>(dm),
                                                          static_cast<T*>(dpicked), n);
  });
  TF_CUDA_CHECK_LAUNCH("LossGradKernel");
}

}  // namespace twinflow::kernels::cuda
