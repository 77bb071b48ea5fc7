#pragma once
// Autograd: appends the backward graph. Each op's OpDef::gradient emits the ops computing its
// inputs' gradients; gradients reaching one tensor along several paths are summed with `add`.
#include <map>
#include <vector>

#include "engine/graph/graph_builder.h"

namespace twinflow::graph {

// Appends ops computing d(loss)/d(x) for each x in `wrt`. `loss` must be a scalar (shape [])
// floating tensor; its gradient starts as 1. Returns wrt tensor -> gradient tensor; a tensor
// the loss does not depend on gets a zero gradient. Throws InvalidArgumentError naming the op
// when a needed op is not differentiable.
std::map<TensorId, TensorId> AddBackward(GraphBuilder& builder, TensorId loss,
                                         const std::vector<TensorId>& wrt);

}  // namespace twinflow::graph
