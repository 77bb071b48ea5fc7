#pragma once
// Reference collectives over host buffers, one buffer per group member in group order. They
// implement each primitive's real semantics on the data (not on layouts), so running a plan
// through them is an independent check of the planner. The CPU runtime reuses them.
#include <vector>

#include "engine/core/reduce_op.h"
#include "engine/core/tensor.h"

namespace twinflow::sbp {

// Every member gets the concatenation of all members' buffers along `axis`.
std::vector<Tensor> AllGather(const std::vector<Tensor>& buffers, int axis);
// Every member gets the elementwise reduction (members' buffers have one shape).
std::vector<Tensor> AllReduce(const std::vector<Tensor>& buffers, ReduceOp op);
// Member i gets balanced part i along `axis` of the reduction.
std::vector<Tensor> ReduceScatter(const std::vector<Tensor>& buffers, ReduceOp op, int axis);
// Member j cuts its buffer into balanced parts along scatter_axis and sends part i to member
// i, which concatenates what it receives along gather_axis in member order.
std::vector<Tensor> AllToAll(const std::vector<Tensor>& buffers, int scatter_axis, int gather_axis);

}  // namespace twinflow::sbp
