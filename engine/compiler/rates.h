#pragma once
// Rates: which ops run once per micro-batch and which once per step. Inputs and everything
// computed from them run per micro-batch; variables, what is computed from variables alone, and
// the optimizer (updates, assigns and the gradient statistics of clipping and loss scaling) run
// per step. Where a step-rate value feeds micro-batch
// ops the Plan repeats it (REPEAT); where micro-batch gradients feed the optimizer it sums
// them (ACC).
#include <vector>

#include "engine/graph/logical_graph.h"
#include "engine/graph/op_registry.h"

namespace twinflow::compiler {

enum class Rate { kStep, kMicroBatch };

// One Rate per op id, from the ops' roles (graph::OpRole). Optimizer updates consume
// gradients summed over the step's micro-batches. Throws InvalidArgumentError naming the op
// when another op that updates state would consume a per-micro-batch value (nothing could
// sum it).
std::vector<Rate> OpRates(const graph::LogicalGraph& graph, const graph::OpRegistry& registry);

}  // namespace twinflow::compiler
