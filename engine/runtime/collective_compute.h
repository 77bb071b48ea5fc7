#pragma once
// The arithmetic of an in-process collective, run by the last member to arrive: it reads every
// member's input view and writes every member's output view. Reductions go in member order, so
// the result never depends on which thread arrived last.
#include <vector>

#include "engine/core/reduce_op.h"
#include "engine/plan/plan.pb.h"
#include "engine/runtime/rendezvous.h"

namespace twinflow::runtime {

// ShapeError when the members' tensors do not fit the collective.
void ComputeCollective(const plan::CollectiveDesc& desc, ReduceOp op,
                       std::vector<CollectiveMember>& members);

}  // namespace twinflow::runtime
