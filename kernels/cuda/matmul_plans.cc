// Row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T: cuBLASLt
// sees each row-major operand as its column-major transpose, so the operands swap places and
// keep their own transpose flags. Batches are one strided-batch call. f32 and bf16 accumulate
// in f32 (CUBLAS_COMPUTE_32F; f32 may use TF32 tensor cores only when the env allows it).
#include "kernels/cuda/matmul_plans.h"

#include <cstdint>
#include <string>
#include <utility>

#include "engine/core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_env.h"

namespace twinflow::kernels::cuda {
namespace {

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
using Desc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;

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

Desc MakeDesc(const CudaEnv& env, const Gemm& g, DType dtype) {
  const cublasComputeType_t compute =
      dtype == DType::kF32 && env.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasLtMatmulDesc_t raw = nullptr;
  TF_CUBLAS_CHECK(cublasLtMatmulDescCreate(&raw, compute, CUDA_R_32F));
  Desc desc(raw);
  // Lt's first operand is row-major B (n x k after its flag), the second row-major A.
  const cublasOperation_t op_first = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  TF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                                 sizeof(op_first)));
  TF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                                 sizeof(op_second)));
  return desc;
}

}  // namespace

struct MatmulPlan {
  Desc desc;
  Layout first, second, out;
  cublasLtMatmulAlgo_t algo{};
};

MatmulPlans::MatmulPlans() = default;
MatmulPlans::~MatmulPlans() = default;

Alignment AlignmentOf(const void* a, const void* b, const void* c) {
  const auto of = [](const void* p) {
    const auto address = reinterpret_cast<uintptr_t>(p);
    int32_t align = 256;
    while (align > 1 && address % static_cast<uintptr_t>(align) != 0) align /= 2;
    return align;
  };
  return {of(a), of(b), of(c)};
}

const MatmulPlan& MatmulPlans::Get(const CudaEnv& env, const Gemm& g, DType dtype,
                                   const Alignment& align) {
  const Key key{dtype, env.allow_tf32, g.ta,    g.tb,   g.batch, g.m, g.n,
                g.k,   align.a,        align.b, align.c};
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  const cudaDataType_t type = dtype == DType::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
  auto plan = std::make_unique<MatmulPlan>();
  plan->desc = MakeDesc(env, g, dtype);
  plan->first = g.tb ? MakeLayout(type, g.k, g.n, g.k, g.batch, g.n * g.k)
                     : MakeLayout(type, g.n, g.k, g.n, g.batch, g.n * g.k);
  plan->second = g.ta ? MakeLayout(type, g.m, g.k, g.m, g.batch, g.m * g.k)
                      : MakeLayout(type, g.k, g.m, g.k, g.batch, g.m * g.k);
  plan->out = MakeLayout(type, g.n, g.m, g.n, g.batch, g.m * g.n);
  cublasLtMatmulPreference_t raw_pref = nullptr;
  TF_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PrefDeleter> pref(raw_pref);
  const uint64_t workspace = env.workspace_bytes;
  TF_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  // Lt's A is our B, its B our A, its C and D our C (the operands swap: see the top).
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, static_cast<uint32_t>(align.b)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, static_cast<uint32_t>(align.a)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, static_cast<uint32_t>(align.c)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, static_cast<uint32_t>(align.c)}};
  for (const auto& [attribute, bytes] : alignments) {
    TF_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(raw_pref, attribute, &bytes, sizeof(bytes)));
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  TF_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(env.lt, plan->desc.get(), plan->first.get(),
                                                 plan->second.get(), plan->out.get(),
                                                 plan->out.get(), raw_pref, 1, &heuristic, &found));
  if (found == 0) {
    throw DeviceError("matmul: cuBLASLt has no algorithm for " + std::string(DTypeName(dtype)) +
                      " [" + std::to_string(g.m) + "x" + std::to_string(g.k) + "] x [" +
                      std::to_string(g.k) + "x" + std::to_string(g.n) + "]");
  }
  plan->algo = heuristic.algo;
  return *plans_.emplace(key, std::move(plan)).first->second;
}

void RunMatmul(const CudaEnv& env, const MatmulPlan& plan, const void* a, const void* b, void* c) {
  const float alpha = 1.0f, beta = 0.0f;
  TF_CUBLAS_CHECK(cublasLtMatmul(env.lt, plan.desc.get(), &alpha, b, plan.first.get(), a,
                                 plan.second.get(), &beta, c, plan.out.get(), c, plan.out.get(),
                                 &plan.algo, env.workspace, env.workspace_bytes, env.stream));
}

}  // namespace twinflow::kernels::cuda
