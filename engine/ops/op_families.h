#pragma once
// The Register*Ops function of each op family file; BuiltinOps() calls them all.
#include "engine/graph/op_registry.h"

namespace twinflow::ops {

void RegisterMatmulOps(graph::OpRegistry& registry);          // matmul_ops.cc
void RegisterElementwiseOps(graph::OpRegistry& registry);     // elementwise_ops.cc
void RegisterActivationOps(graph::OpRegistry& registry);      // activation_ops.cc
void RegisterReductionOps(graph::OpRegistry& registry);       // reduction_ops.cc
void RegisterSoftmaxOps(graph::OpRegistry& registry);         // softmax_ops.cc
void RegisterNormalizationOps(graph::OpRegistry& registry);   // normalization_ops.cc
void RegisterEmbeddingOps(graph::OpRegistry& registry);       // embedding_ops.cc
void RegisterShapeOps(graph::OpRegistry& registry);           // shape_ops.cc
void RegisterMiscOps(graph::OpRegistry& registry);            // misc_ops.cc
void RegisterFusedAttentionOps(graph::OpRegistry& registry);  // fused_attention_ops.cc
void RegisterGradControlOps(graph::OpRegistry& registry);     // grad_control_ops.cc

}  // namespace twinflow::ops
