#pragma once
// The model FLOPs of one training step, counted as published tables count them, so that the
// simulator's "model TFLOP/s per GPU" reads against a Megatron or torchtitan log: the FLOPs the
// model needs (forward and backward, 3x the forward), never those recomputation or padding add.
#include "models/model.h"

namespace twinflow::models {

// Megatron-LM's count (megatron/training/training.py, num_floating_point_operations; the form
// of Narayanan et al. 2021, eq. 3, extended to grouped-query attention and gated MLPs):
//   12 B s l h^2 [ (1 + g/n + s/h) + (f/h) * (3/2 if SwiGLU) + V / (2 l h) ]
// for B samples of s tokens, l layers, hidden h, n heads of which g key-value groups, FFN width
// f, vocabulary V. Attention scores are counted whole (s^2, no causal halving), as Megatron does.
double DecoderModelFlops(const GptConfig& config);

// 6 x weights x samples: each weight's multiply-add in the forward pass and twice in the
// backward pass (input and weight gradients); biases and the loss are left out.
double MlpModelFlops(const MlpConfig& config);

}  // namespace twinflow::models
