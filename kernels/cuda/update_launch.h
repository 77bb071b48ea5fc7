#pragma once
// Launchers of update_kernels.cu: the optimizer updates (f32 or bf16 tensors, one dtype for
// all of them) and step_increment. Formulas as the CPU kernels (kernels/cpu/update_kernels.cc).
// `factor`: the device address of the gradient factor (f32, engine/ops/update_ops.cc), or null
// for none: the gradient is multiplied by it, and where it is not finite the outputs are the
// inputs (a skipped step).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"

namespace twinflow::kernels::cuda {

struct UpdateAttrs {
  double lr = 0;
  // The learning-rate input (attr lr_input), read on the device in place of lr; null: lr.
  const float* lr_on_device = nullptr;
  double weight_decay = 0;
  double momentum = 0;  // sgd_momentum_update
  double beta1 = 0.9;   // adam_update from here
  double beta2 = 0.999;
  double epsilon = 1e-8;
  bool decoupled = false;
};

// p' = p - lr (g + wd p).
void LaunchSgd(DType dtype, const void* p, const void* g, void* p_out, int64_t n,
               const UpdateAttrs& a, const float* factor, cudaStream_t stream);
// buf' = mu buf + g + wd p; p' = p - lr buf'.
void LaunchSgdMomentum(DType dtype, const void* p, const void* g, const void* buf, void* p_out,
                       void* buf_out, int64_t n, const UpdateAttrs& a, const float* factor,
                       cudaStream_t stream);
// Adam(W), in double; `step` (one element of `step_dtype`, read on the device) counts the
// updates done so far.
void LaunchAdam(DType dtype, const void* p, const void* g, const void* m, const void* v,
                const void* step, DType step_dtype, void* p_out, void* m_out, void* v_out,
                int64_t n, const UpdateAttrs& a, const float* factor, cudaStream_t stream);
// out = x + 1 (any dtype, through double).
void LaunchStepIncrement(DType dtype, const void* x, void* out, int64_t n, const float* factor,
                         cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
