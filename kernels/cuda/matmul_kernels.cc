// CUDA matmul and batch_matmul through cuBLASLt. Row-major C = op(A) op(B) is computed as the
// column-major C^T = op(B)^T op(A)^T: cuBLASLt sees each row-major operand as its column-major
// transpose, so the operands swap places and keep their own transpose flags. Batches are one
// strided-batch call. f32 and bf16 accumulate in f32 (CUBLAS_COMPUTE_32F; f32 may use TF32
// tensor cores only when the env allows it).
#include <memory>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/host_helpers.h"

namespace twinflow::kernels::cuda {
namespace {

struct Gemm {
  bool ta = false, tb = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
};

// Checks the operands as the CPU kernel does and returns the problem's sizes.
Gemm CheckMatmul(const KernelContext& ctx, const std::string& op, bool batched) {
  CheckArity(ctx, 2, 1, op);
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  CheckDType(b, a.dtype(), op, "input b");
  CheckDType(*ctx.outputs[0], a.dtype(), op, "output");
  const int rank = a.shape().rank();
  if (rank < 2 || rank != b.shape().rank() || (!batched && rank != 2) || (batched && rank < 3)) {
    throw ShapeError(op + ": unsupported input shapes " + a.shape().ToString() + " and " +
                     b.shape().ToString());
  }
  Gemm g;
  g.ta = ctx.attrs.GetBool("transpose_a", false);
  g.tb = ctx.attrs.GetBool("transpose_b", false);
  const int r = rank - 2;
  std::vector<int64_t> out_dims;
  for (int i = 0; i < r; ++i) {
    if (a.shape()[i] != b.shape()[i]) {
      throw ShapeError(op + ": batch dimensions differ: " + a.shape().ToString() + " and " +
                       b.shape().ToString());
    }
    g.batch *= a.shape()[i];
    out_dims.push_back(a.shape()[i]);
  }
  g.m = a.shape()[r + (g.ta ? 1 : 0)];
  g.k = a.shape()[r + (g.ta ? 0 : 1)];
  g.n = b.shape()[r + (g.tb ? 0 : 1)];
  if (b.shape()[r + (g.tb ? 1 : 0)] != g.k) {
    throw ShapeError(op + ": contracted dimensions differ: " + a.shape().ToString() + " and " +
                     b.shape().ToString());
  }
  out_dims.push_back(g.m);
  out_dims.push_back(g.n);
  CheckShape(*ctx.outputs[0], Shape(out_dims), op, "output");
  return g;
}

// Owning wrappers, so an exception between create and destroy leaks nothing.
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayoutOpaque_t* p) const { cublasLtMatrixLayoutDestroy(p); }
};
struct DescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* p) const { cublasLtMatmulDescDestroy(p); }
};
struct PrefDeleter {
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;

// A column-major rows x cols matrix with leading dimension `ld`, `batch` of them `stride` apart.
Layout MakeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                  int64_t stride) {
  cublasLtMatrixLayout_t raw = nullptr;
  TF_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&raw, type, static_cast<uint64_t>(rows),
                                             static_cast<uint64_t>(cols), ld));
  Layout layout(raw);
  const int32_t count = static_cast<int32_t>(batch);
  TF_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                   sizeof(count)));
  TF_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                   &stride, sizeof(stride)));
  return layout;
}

void RunLt(const CudaEnv& env, const Gemm& g, DType dtype, const void* a, const void* b, void* c) {
  const cudaDataType_t type = dtype == DType::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute =
      dtype == DType::kF32 && env.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasLtMatmulDesc_t raw_desc = nullptr;
  TF_CUBLAS_CHECK(cublasLtMatmulDescCreate(&raw_desc, compute, CUDA_R_32F));
  std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter> desc(raw_desc);
  // Lt's first operand is row-major B (n x k after its flag), the second row-major A.
  const cublasOperation_t op_first = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  TF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                                 sizeof(op_first)));
  TF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                                 sizeof(op_second)));
  const Layout first = g.tb ? MakeLayout(type, g.k, g.n, g.k, g.batch, g.n * g.k)
                            : MakeLayout(type, g.n, g.k, g.n, g.batch, g.n * g.k);
  const Layout second = g.ta ? MakeLayout(type, g.m, g.k, g.m, g.batch, g.m * g.k)
                             : MakeLayout(type, g.k, g.m, g.k, g.batch, g.m * g.k);
  const Layout out = MakeLayout(type, g.n, g.m, g.n, g.batch, g.m * g.n);
  cublasLtMatmulPreference_t raw_pref = nullptr;
  TF_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PrefDeleter> pref(raw_pref);
  const uint64_t workspace = env.workspace_bytes;
  TF_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  TF_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(env.lt, raw_desc, first.get(), second.get(),
                                                 out.get(), out.get(), raw_pref, 1, &heuristic,
                                                 &found));
  if (found == 0) {
    throw DeviceError("matmul: cuBLASLt has no algorithm for " + std::string(DTypeName(dtype)) +
                      " [" + std::to_string(g.m) + "x" + std::to_string(g.k) + "] x [" +
                      std::to_string(g.k) + "x" + std::to_string(g.n) + "]");
  }
  const float alpha = 1.0f, beta = 0.0f;
  TF_CUBLAS_CHECK(cublasLtMatmul(env.lt, raw_desc, &alpha, b, first.get(), a, second.get(), &beta,
                                 c, out.get(), c, out.get(), &heuristic.algo, env.workspace,
                                 env.workspace_bytes, env.stream));
}

void Matmul(const KernelContext& ctx, const std::string& op, bool batched) {
  const Gemm g = CheckMatmul(ctx, op, batched);
  const CudaEnv& env = Env(ctx, op);
  Tensor& c = *ctx.outputs[0];
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  if (g.k == 0) {  // an empty contraction (an empty split of k): the product is zero
    ZeroAsync(env, c.raw(), c.nbytes());
    return;
  }
  RunLt(env, g, ctx.inputs[0]->dtype(), ctx.inputs[0]->raw(), ctx.inputs[1]->raw(), c.raw());
}

}  // namespace

void RegisterMatmulCudaKernels(KernelRegistry& registry) {
  for (const char* name : {"matmul", "batch_matmul"}) {
    const std::string op = name;
    const bool batched = op == "batch_matmul";
    RegisterCuda(registry, op, {DType::kF32, DType::kBF16},
                 [op, batched](const KernelContext& ctx) { Matmul(ctx, op, batched); });
  }
}

}  // namespace twinflow::kernels::cuda
