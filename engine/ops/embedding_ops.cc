// Placeholder: the embedding op family is being written.
#include "engine/ops/op_families.h"

namespace twinflow::ops {
void RegisterEmbeddingOps(graph::OpRegistry&) {}
}  // namespace twinflow::ops
