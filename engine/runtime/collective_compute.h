#pragma once
// The arithmetic of an in-process collective, run by the last member to arrive, on its own
// Device: it reads every member's input view and writes every member's output view.
// Reductions go in member order, so the result never depends on which thread arrived last.
// all_reduce runs on the device (on a GPU, reading its peers' memory); the other kinds are
// computed on the host by the reference collectives, through host copies on a GPU.
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
