// Placeholder: the misc op family is being written.
#include "engine/ops/op_families.h"

namespace twinflow::ops {
void RegisterMiscOps(graph::OpRegistry&) {}
}  // namespace twinflow::ops
