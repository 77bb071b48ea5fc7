#pragma once
// Launchers of activation_kernels.cu (f32 and bf16).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"

namespace twinflow::kernels::cuda {

enum class Activation {
  kRelu,
  kGelu,
  kTanh,
  kExp,
  kSilu,
  kReluGrad,
  kGeluGrad,
  kTanhGrad,
  kSiluGrad
};

// Forward ops read x (fwd null); gradients read dy as x and the forward tensor as fwd.
void LaunchActivation(Activation op, DType dtype, const void* x, const void* fwd, void* out,
                      int64_t n, cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
