#pragma once
// Several logical devices of one process sharing a physical accelerator, as `twinflow run`
// places them when the Plan has more devices than the machine has GPUs (logical device i on
// GPU i mod GPUs: engine/runtime/device_place.h). SimOptions::physical_devices asks for it.
// Each logical device keeps its own streams, so their kernels run at once and share the GPU:
// the simulator runs them on a CoreSharing with one "core" per GPU (processor sharing). An
// in-process collective among logical devices on one GPU is the runtime's ComputeCollective
// (engine/runtime/collective_compute.cc): copies and reductions through the GPU's memory, as
// kernels on the last member's stream; transfers between them are copies through memory too.
#include <cstdint>
#include <vector>

#include "engine/core/collective_kind.h"
#include "engine/plan/plan.pb.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::sim {

// The cluster device of each plan device: itself, or with `physical` > 0 plan device i on
// cluster device i mod `physical`. InvalidArgumentError naming what is wrong: a Plan device
// beyond the cluster; with `physical`: more than the cluster has, a CPU host (its cores are
// shared already: cores_per_node), a Plan over several ranks, or a comm group whose members
// neither all share one device nor all have their own.
std::vector<int> ClusterDevicesOf(const plan::Plan& plan, const Topology& topology, int physical);

// Whether some cluster device runs more than one plan device.
bool SharesDevices(const std::vector<int>& cluster_device);

// What ComputeCollective does for `kind` over `members` logical devices on one GPU, for a
// collective of `bytes` (its input's; all_gather: its output's): the bytes it reads and writes
// in memory, and the kernels (moves) it launches; `in_place`: an all_reduce into its inputs.
struct InMemoryCollective {
  double bytes = 0;
  int64_t moves = 0;
};
InMemoryCollective InMemoryCollectiveCost(CollectiveKind kind, int64_t members, int64_t bytes,
                                          bool in_place);

}  // namespace twinflow::sim
