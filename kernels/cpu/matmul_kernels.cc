// CPU matmul and batch_matmul: OpenBLAS sgemm / dgemm, one call per batch element.
#include <cblas.h>

#include "kernels/cpu/kernel_families.h"
#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
namespace {

void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
          float* c) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a,
              static_cast<blasint>(ta ? m : k), b, static_cast<blasint>(tb ? k : n), 0.0f, c,
              static_cast<blasint>(n));
}

void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, const double* b,
          double* c) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0, a,
              static_cast<blasint>(ta ? m : k), b, static_cast<blasint>(tb ? k : n), 0.0, c,
              static_cast<blasint>(n));
}

template <typename T>
void MatmulKernel(const KernelContext& ctx, const std::string& op, bool batched) {
  CheckArity(ctx, 2, 1, op);
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  Tensor& c = *ctx.outputs[0];
  CheckDType(b, a.dtype(), op, "input b");
  CheckDType(c, a.dtype(), op, "output");
  const int rank = a.shape().rank();
  if (rank < 2 || rank != b.shape().rank() || (!batched && rank != 2) || (batched && rank < 3)) {
    throw ShapeError(op + ": unsupported input shapes " + a.shape().ToString() + " and " +
                     b.shape().ToString());
  }
  const bool ta = ctx.attrs.GetBool("transpose_a", false);
  const bool tb = ctx.attrs.GetBool("transpose_b", false);
  const int r = rank - 2;
  std::vector<int64_t> out_dims;
  int64_t batch = 1;
  for (int i = 0; i < r; ++i) {
    if (a.shape()[i] != b.shape()[i]) {
      throw ShapeError(op + ": batch dimensions differ: " + a.shape().ToString() + " and " +
                       b.shape().ToString());
    }
    batch *= a.shape()[i];
    out_dims.push_back(a.shape()[i]);
  }
  const int64_t m = a.shape()[r + (ta ? 1 : 0)];
  const int64_t k = a.shape()[r + (ta ? 0 : 1)];
  const int64_t n = b.shape()[r + (tb ? 0 : 1)];
  if (b.shape()[r + (tb ? 1 : 0)] != k) {
    throw ShapeError(op + ": contracted dimensions differ: " + a.shape().ToString() + " and " +
                     b.shape().ToString());
  }
  out_dims.push_back(m);
  out_dims.push_back(n);
  CheckShape(c, Shape(out_dims), op, "output");
  if (m == 0 || n == 0 || batch == 0) return;
  T* out = c.data<T>();
  if (k == 0) {  // an empty contraction (an empty split of k): the product is zero
    c.Fill(0.0);
    return;
  }
  for (int64_t i = 0; i < batch; ++i) {
    Gemm(ta, tb, m, n, k, a.data<T>() + i * m * k, b.data<T>() + i * k * n, out + i * m * n);
  }
}

void Register(KernelRegistry& registry, const std::string& op, bool batched) {
  registry.Register({op, DeviceType::kCpu, DType::kF32}, [op, batched](const KernelContext& ctx) {
    MatmulKernel<float>(ctx, op, batched);
  });
  registry.Register({op, DeviceType::kCpu, DType::kF64}, [op, batched](const KernelContext& ctx) {
    MatmulKernel<double>(ctx, op, batched);
  });
}

}  // namespace

void RegisterMatmulKernels(KernelRegistry& registry) {
  // Kernels run single-threaded (one device is one executor thread): OpenBLAS's own threads
  // would oversubscribe the cores and make timings noisy.
  openblas_set_num_threads(1);
  Register(registry, "matmul", false);
  Register(registry, "batch_matmul", true);
}

}  // namespace twinflow::kernels
