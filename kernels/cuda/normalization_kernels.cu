// Device code of layer_norm, rms_norm and their gradients. Rows: one block each, with
// BlockReduce (layer_norm: two passes, mean then centred variance). dgamma and dbeta: one thread
// per column summing the rows in order, so no atomics and the CPU's summation order.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/normalization_launch.h"

namespace twinflow::kernels::cuda {
namespace {

// Mean and 1/sqrt(var + epsilon) of the row at x (every thread of the block gets them).
template <typename T>
__device__ void RowStats(const T* x, int64_t width, double epsilon, Acc<T>* mean, Acc<T>* inv) {
  using A = Acc<T>;
  A s = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) s += LoadAs<A>(x, j);
  const A m = BlockReduce(s, SumOp{}, A(0)) / static_cast<A>(width);
  A v = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    const A d = LoadAs<A>(x, j) - m;
    v += d * d;
  }
  v = BlockReduce(v, SumOp{}, A(0)) / static_cast<A>(width);
  *mean = m;
  *inv = A(1) / sqrt(v + static_cast<A>(epsilon));
}

template <typename T>
__global__ void LayerNormKernel(const T* x, const T* gamma, const T* beta, T* y, int64_t rows,
                                int64_t width, double epsilon) {
  using A = Acc<T>;
  TF_ROW_LOOP(r, rows) {
    A mean, inv;
    RowStats(x + r * width, width, epsilon, &mean, &inv);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      const A xh = (LoadAs<A>(x, r * width + j) - mean) * inv;
      StoreAs(y, r * width + j, xh * LoadAs<A>(gamma, j) + LoadAs<A>(beta, j));
    }
  }
}

template <typename T>
__global__ void LayerNormGradRows(const T* x, const T* gamma, const T* dy, T* dx, double* stats,
                                  int64_t rows, int64_t width, double epsilon) {
  using A = Acc<T>;
  TF_ROW_LOOP(r, rows) {
    const T* row = x + r * width;
    const T* g = dy + r * width;
    A mean, inv;
    RowStats(row, width, epsilon, &mean, &inv);
    A mg = 0, mgx = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      const A gj = LoadAs<A>(g, j) * LoadAs<A>(gamma, j);
      mg += gj;
      mgx += gj * ((LoadAs<A>(row, j) - mean) * inv);
    }
    mg = BlockReduce(mg, SumOp{}, A(0)) / static_cast<A>(width);
    mgx = BlockReduce(mgx, SumOp{}, A(0)) / static_cast<A>(width);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      const A xh = (LoadAs<A>(row, j) - mean) * inv;
      const A gj = LoadAs<A>(g, j) * LoadAs<A>(gamma, j);
      StoreAs(dx, r * width + j, inv * (gj - mg - xh * mgx));
    }
    if (threadIdx.x == 0) {
      stats[2 * r] = mean;
      stats[2 * r + 1] = inv;
    }
  }
}

// What the column terms of a norm's gradient read: x, dy, the row statistics, the width.
template <typename T>
struct ColumnInputs {
  const T *x, *dy;
  const double* stats;
  int64_t width;
};

// Layer norm's column terms of row r, column j: dgamma's dy * xhat and dbeta's dy.
template <typename T>
struct LayerNormTerms : ColumnInputs<T> {
  static constexpr int kSums = 2;
  using ColumnInputs<T>::x, ColumnInputs<T>::dy, ColumnInputs<T>::stats, ColumnInputs<T>::width;
  __device__ void Add(int64_t r, int64_t j, Acc<T> (&sums)[kSums]) const {
    using A = Acc<T>;
    const A g = LoadAs<A>(dy, r * width + j);
    const A xh = (LoadAs<A>(x, r * width + j) - static_cast<A>(stats[2 * r])) *
                 static_cast<A>(stats[2 * r + 1]);
    sums[0] += g * xh;
    sums[1] += g;
  }
};

// RMS norm's: dgamma's dy * x / rms.
template <typename T>
struct RmsNormTerms : ColumnInputs<T> {
  static constexpr int kSums = 1;
  using ColumnInputs<T>::x, ColumnInputs<T>::dy, ColumnInputs<T>::stats, ColumnInputs<T>::width;
  __device__ void Add(int64_t r, int64_t j, Acc<T> (&sums)[kSums]) const {
    using A = Acc<T>;
    sums[0] +=
        LoadAs<A>(dy, r * width + j) * LoadAs<A>(x, r * width + j) * static_cast<A>(stats[r]);
  }
};

// First pass of the column sums: block row blockIdx.y sums its chunk of rows, in row order,
// into partials[(k * chunks + chunk) * width + j] for each sum k.
template <typename T, typename Terms>
__global__ void ColumnPartials(Terms terms, int64_t rows, int64_t width, double* partials) {
  const int64_t chunk = blockIdx.y, chunks = gridDim.y;
  const int64_t begin = rows * chunk / chunks, end = rows * (chunk + 1) / chunks;
  TF_GRID_LOOP(j, width) {
    Acc<T> sums[Terms::kSums] = {};
    for (int64_t r = begin; r < end; ++r) terms.Add(r, j, sums);
#pragma unroll
    for (int k = 0; k < Terms::kSums; ++k) {
      partials[(k * chunks + chunk) * width + j] = static_cast<double>(sums[k]);
    }
  }
}

// Second pass: each column's chunks added in order, into out[k][j].
template <typename T, int kSums>
__global__ void ColumnTotals(const double* partials, int64_t chunks, int64_t width, T* out0,
                             T* out1) {
  TF_GRID_LOOP(j, width) {
#pragma unroll
    for (int k = 0; k < kSums; ++k) {
      double total = 0;
      for (int64_t c = 0; c < chunks; ++c) total += partials[(k * chunks + c) * width + j];
      StoreAs(k == 0 ? out0 : out1, j, total);
    }
  }
}

// Both passes of the column sums of `terms` over rows x width into out0 (and out1).
template <typename T, typename Terms>
void LaunchColumnSums(const Terms& terms, int64_t rows, int64_t width, double* partials, T* out0,
                      T* out1, cudaStream_t stream) {
  const dim3 grid(BlocksFor(width), kColumnChunks);
  ColumnPartials<T><<<grid, kThreads, 0, stream>>>(terms, rows, width, partials);
  TF_CUDA_CHECK_LAUNCH("ColumnPartials");
  ColumnTotals<T, Terms::kSums>
      <<<BlocksFor(width), kThreads, 0, stream>>>(partials, kColumnChunks, width, out0, out1);
  TF_CUDA_CHECK_LAUNCH("ColumnTotals");
}

// 1/sqrt(mean(x^2) + epsilon) of the row at x (every thread of the block gets it).
template <typename T>
__device__ Acc<T> InverseRms(const T* x, int64_t width, double epsilon) {
  using A = Acc<T>;
  A s = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    const A v = LoadAs<A>(x, j);
    s += v * v;
  }
  const A ms = BlockReduce(s, SumOp{}, A(0)) / static_cast<A>(width);
  return A(1) / sqrt(ms + static_cast<A>(epsilon));
}

template <typename T>
__global__ void RmsNormKernel(const T* x, const T* gamma, T* y, int64_t rows, int64_t width,
                              double epsilon) {
  using A = Acc<T>;
  TF_ROW_LOOP(r, rows) {
    const A inv = InverseRms(x + r * width, width, epsilon);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      StoreAs(y, r * width + j, LoadAs<A>(x, r * width + j) * inv * LoadAs<A>(gamma, j));
    }
  }
}

template <typename T>
__global__ void RmsNormGradRows(const T* x, const T* gamma, const T* dy, T* dx, double* stats,
                                int64_t rows, int64_t width, double epsilon) {
  using A = Acc<T>;
  TF_ROW_LOOP(r, rows) {
    const T* row = x + r * width;
    const T* g = dy + r * width;
    const A inv = InverseRms(row, width, epsilon);
    A mgx = 0;
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      mgx += LoadAs<A>(g, j) * LoadAs<A>(gamma, j) * (LoadAs<A>(row, j) * inv);
    }
    mgx = BlockReduce(mgx, SumOp{}, A(0)) / static_cast<A>(width);
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      const A xh = LoadAs<A>(row, j) * inv;
      StoreAs(dx, r * width + j, inv * (LoadAs<A>(g, j) * LoadAs<A>(gamma, j) - xh * mgx));
    }
    if (threadIdx.x == 0) stats[r] = inv;
  }
}

template <typename T>
void LaunchRmsGrad(const void* x, const void* gamma, const void* dy, void* dx, void* dgamma,
                   double* stats, int64_t rows, int64_t width, double epsilon,
                   cudaStream_t stream) {
  const T* xs = static_cast<const T*>(x);
  const T* gs = static_cast<const T*>(dy);
  if (rows > 0) {
    RmsNormGradRows<T><<<RowBlocks(rows), kThreads, 0, stream>>>(
        xs, static_cast<const T*>(gamma), gs, static_cast<T*>(dx), stats, rows, width, epsilon);
    TF_CUDA_CHECK_LAUNCH("RmsNormGradRows");
  }
  LaunchColumnSums<T>(RmsNormTerms<T>{{xs, gs, stats, width}}, rows, width, stats + rows,
                      static_cast<T*>(dgamma), static_cast<T*>(nullptr), stream);
}

template <typename T>
void LaunchGrad(const void* x, const void* gamma, const void* dy, void* dx, void* dgamma,
                void* dbeta, double* stats, int64_t rows, int64_t width, double epsilon,
                cudaStream_t stream) {
  const T* xs = static_cast<const T*>(x);
  const T* gs = static_cast<const T*>(dy);
  if (rows > 0) {
    LayerNormGradRows<T><<<RowBlocks(rows), kThreads, 0, stream>>>(
        xs, static_cast<const T*>(gamma), gs, static_cast<T*>(dx), stats, rows, width, epsilon);
    TF_CUDA_CHECK_LAUNCH("LayerNormGradRows");
  }
  // With no rows the column sums are zeros, written by the same kernels.
  LaunchColumnSums<T>(LayerNormTerms<T>{{xs, gs, stats, width}}, rows, width, stats + 2 * rows,
                      static_cast<T*>(dgamma), static_cast<T*>(dbeta), stream);
}

}  // namespace

void LaunchLayerNorm(DType dtype, const void* x, const void* gamma, const void* beta, void* y,
                     int64_t rows, int64_t width, double epsilon, cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  if (dtype == DType::kF32) {
    LayerNormKernel<float><<<RowBlocks(rows), kThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<const float*>(gamma),
        static_cast<const float*>(beta), static_cast<float*>(y), rows, width, epsilon);
  } else {
    LayerNormKernel<bf16><<<RowBlocks(rows), kThreads, 0, stream>>>(
        static_cast<const bf16*>(x), static_cast<const bf16*>(gamma),
        static_cast<const bf16*>(beta), static_cast<bf16*>(y), rows, width, epsilon);
  }
  TF_CUDA_CHECK_LAUNCH("LayerNormKernel");
}

void LaunchLayerNormGrad(DType dtype, const void* x, const void* gamma, const void* dy, void* dx,
                         void* dgamma, void* dbeta, double* stats, int64_t rows, int64_t width,
                         double epsilon, cudaStream_t stream) {
  if (width == 0) return;
  if (dtype == DType::kF32) {
    LaunchGrad<float>(x, gamma, dy, dx, dgamma, dbeta, stats, rows, width, epsilon, stream);
  } else {
    LaunchGrad<bf16>(x, gamma, dy, dx, dgamma, dbeta, stats, rows, width, epsilon, stream);
  }
}

void LaunchRmsNorm(DType dtype, const void* x, const void* gamma, void* y, int64_t rows,
                   int64_t width, double epsilon, cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  if (dtype == DType::kF32) {
    RmsNormKernel<float><<<RowBlocks(rows), kThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<const float*>(gamma), static_cast<float*>(y),
        rows, width, epsilon);
  } else {
    RmsNormKernel<bf16><<<RowBlocks(rows), kThreads, 0, stream>>>(
        static_cast<const bf16*>(x), static_cast<const bf16*>(gamma), static_cast<bf16*>(y), rows,
        width, epsilon);
  }
  TF_CUDA_CHECK_LAUNCH("RmsNormKernel");
}

void LaunchRmsNormGrad(DType dtype, const void* x, const void* gamma, const void* dy, void* dx,
                       void* dgamma, double* stats, int64_t rows, int64_t width, double epsilon,
                       cudaStream_t stream) {
  if (width == 0) return;
  if (dtype == DType::kF32) {
    LaunchRmsGrad<float>(x, gamma, dy, dx, dgamma, stats, rows, width, epsilon, stream);
  } else {
    LaunchRmsGrad<bf16>(x, gamma, dy, dx, dgamma, stats, rows, width, epsilon, stream);
  }
}

}  // namespace twinflow::kernels::cuda
