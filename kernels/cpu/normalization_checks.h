#pragma once
// Argument checks of layer_norm, rms_norm and their gradients, shared by the CPU kernels and the
// CUDA host side so both devices accept the same tensors and throw the same errors.
#include <cstdint>

#include "kernels/kernel.h"

namespace twinflow::kernels {

// x viewed as rows over its last axis: `count` rows of `width` values.
struct LayerNormRows {
  int64_t count = 0;
  int64_t width = 0;
};

// layer_norm(x, gamma [width], beta [width]) -> x's shape.
LayerNormRows CheckLayerNorm(const KernelContext& ctx);
// layer_norm_grad(x, gamma, dy) -> (dx, dgamma [width], dbeta [width]).
LayerNormRows CheckLayerNormGrad(const KernelContext& ctx);
// rms_norm(x, gamma [width]) -> x's shape.
LayerNormRows CheckRmsNorm(const KernelContext& ctx);
// rms_norm_grad(x, gamma, dy) -> (dx, dgamma [width]).
LayerNormRows CheckRmsNormGrad(const KernelContext& ctx);

}  // namespace twinflow::kernels
