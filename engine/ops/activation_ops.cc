// Placeholder: the activation op family is being written.
#include "engine/ops/op_families.h"

namespace twinflow::ops {
void RegisterActivationOps(graph::OpRegistry&) {}
}  // namespace twinflow::ops
