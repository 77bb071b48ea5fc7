#include "engine/ops/builtin_ops.h"

#include "engine/ops/op_families.h"

namespace twinflow::ops {

graph::OpRegistry BuiltinOps() {
  graph::OpRegistry registry;
  RegisterMatmulOps(registry);
  RegisterElementwiseOps(registry);
  RegisterActivationOps(registry);
  RegisterReductionOps(registry);
  RegisterSoftmaxOps(registry);
  RegisterNormalizationOps(registry);
  RegisterEmbeddingOps(registry);
  RegisterShapeOps(registry);
  RegisterMiscOps(registry);
  RegisterFusedAttentionOps(registry);
  RegisterGradControlOps(registry);
  return registry;
}

}  // namespace twinflow::ops
