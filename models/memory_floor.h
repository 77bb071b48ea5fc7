#pragma once
// A floor under a model's memory per device, from its graph alone (no search, no lowering):
// what tune uses to drop a strategy that cannot fit before compiling and simulating it.
#include <cstdint>

#include "engine/graph/op_registry.h"
#include "models/model.h"

namespace twinflow::models {

// The most bytes of variables (parameters and optimizer state) any one device holds. Variables
// live in the arena for the whole step, so every Plan compiled from `model` has an arena at
// least this large on some device. A variable pinned on every mesh axis is counted in its
// pinned layout, slice by slice; any other is counted as if split evenly over its devices (the
// leanest any layout could make it), so the floor holds whatever the search chooses.
int64_t VariableBytesFloor(const BuiltModel& model, const graph::OpRegistry& registry);

}  // namespace twinflow::models
