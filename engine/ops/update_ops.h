#pragma once
// Optimizer update ops (sgd_update, sgd_momentum_update, adam_update, step_increment), part of
// the misc family: RegisterMiscOps calls RegisterUpdateOps.
#include "engine/graph/op_registry.h"

namespace twinflow::ops {

void RegisterUpdateOps(graph::OpRegistry& registry);

}  // namespace twinflow::ops
