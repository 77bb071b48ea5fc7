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
//
// Activation recomputation: each of `recompute` is a segment of forward ops (a transformer
// block, say; no source ops). The backward pass does not read the tensors computed inside a
// segment: when it reaches the segment it runs the segment's ops again (named
// "<op>/recompute") on its inputs, each passed through a `recompute_gate` that waits for the
// gradient of the segment's last output, and the segment's gradients read the recomputed
// tensors. The forward results inside a segment then die inside the forward pass; only the
// segment's inputs live on until the backward pass, as in Megatron's full recomputation. The
// gradients are the same values as without recomputation (the ops are deterministic).
std::map<TensorId, TensorId> AddBackward(GraphBuilder& builder, TensorId loss,
                                         const std::vector<TensorId>& wrt,
                                         const std::vector<std::vector<OpId>>& recompute = {});

}  // namespace twinflow::graph
