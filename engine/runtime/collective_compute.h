#pragma once
// The arithmetic of an in-process collective, run by the last member to arrive, on its own
// Device: it reads every member's input view and writes every member's output view, as region
// copies and reductions on the device (on a GPU, kernels reading and writing its peers'
// memory; through host copies where the device cannot reach a member's). Reductions go in
// member order, as the reference collectives (sbp/collective_reference.h) do, so the result
// never depends on which thread arrived last and equals theirs bit for bit.
#include <vector>

#include "engine/core/reduce_op.h"
#include "engine/plan/plan.pb.h"
#include "engine/runtime/device.h"
#include "engine/runtime/rendezvous.h"

namespace twinflow::runtime {

// ShapeError when the members' tensors do not fit the collective.
void ComputeCollective(Device& device, const plan::CollectiveDesc& desc, ReduceOp op,
                       std::vector<CollectiveMember>& members);

}  // namespace twinflow::runtime
