#pragma once
// MatmulPlans: the cuBLASLt setup of a matmul shape, made once per CudaEnv and reused. A
// descriptor, three matrix layouts and the heuristic's algorithm cost tens of microseconds of
// host time to make, more than a small GEMM's whole run, and a training step repeats the same
// few dozen shapes thousands of times. Used only on its env's thread (as its stream is).
#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "engine/core/dtype.h"

namespace twinflow::kernels {

struct CudaEnv;

namespace cuda {

// Row-major C[batch, m, n] = op(A)[batch, m, k] op(B)[batch, k, n].
struct Gemm {
  bool ta = false, tb = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
};

// The alignment of the operands' addresses the plan may assume (a power of two, at most 256):
// cuBLASLt's heuristic otherwise assumes 256 bytes and may pick a kernel that fails on the
// runtime's slots, which the Plan aligns to 64 only (engine/plan/slot_alignment.h).
struct Alignment {
  int32_t a = 256, b = 256, c = 256;
};
Alignment AlignmentOf(const void* a, const void* b, const void* c);

struct MatmulPlan;  // matmul_plans.cc: the descriptor, the layouts and the algorithm

class MatmulPlans {
 public:
  MatmulPlans();
  ~MatmulPlans();
  // The plan for `g` in `dtype` (f32 or bf16) under `env`'s TF32 choice and workspace, for
  // operands at `align`, made on first use; DeviceError when cuBLASLt has no algorithm for it.
  // Valid as long as this lives.
  const MatmulPlan& Get(const CudaEnv& env, const Gemm& g, DType dtype, const Alignment& align);

 private:
  using Key = std::tuple<DType, bool, bool, bool, int64_t, int64_t, int64_t, int64_t, int32_t,
                         int32_t, int32_t>;
  std::map<Key, std::unique_ptr<MatmulPlan>> plans_;
};

// C = op(A) op(B) on env's stream with `plan` (made for this shape and dtype).
void RunMatmul(const CudaEnv& env, const MatmulPlan& plan, const void* a, const void* b, void* c);

}  // namespace cuda
}  // namespace twinflow::kernels
