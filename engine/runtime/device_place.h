#pragma once
// DevicePlace: where a logical device of a Plan sits in this process and node, which decides the
// physical GPU a cuda device uses. Under mpirun each rank takes its own GPUs: the node-local
// rank (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK) times the rank's device count, plus the device's
// slot among them, modulo the node's GPUs. So one rank per GPU gets distinct GPUs, and more
// logical devices than GPUs wrap around and share (each with its own streams and arena).
#include <cstdint>
#include <vector>

#include "engine/plan/plan.pb.h"

namespace twinflow::runtime {

struct DevicePlace {
  int local_rank = 0;  // this rank's index among the ranks of its node
  int64_t slot = 0;    // the device's index among this rank's devices, in device order
  int64_t count = 1;   // this rank's devices
};

// The GPU ordinal (0 .. gpus-1) of a device at `place` on a node of `gpus` GPUs (gpus > 0).
int GpuFor(const DevicePlace& place, int gpus);

// By Plan device: the place of each device of `rank` (the `local_rank`-th rank of its node);
// other ranks' devices get a default place.
std::vector<DevicePlace> DevicePlaces(const plan::Plan& plan, int rank, int local_rank);

}  // namespace twinflow::runtime
