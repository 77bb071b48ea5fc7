#pragma once
// Timing on a Device through the runtime's own Device interface (uploads, RunKernel,
// Synchronize), so the same code measures a GPU and, in tests, the host: what
// `twinflow calibrate --device cuda` measures before the simulator's efficiencies are fitted
// (simulator/hardware/calibration_fit.h). Calls run back to back and then wait for the device,
// as a run queues kernels, so a GPU's launch cost hides behind kernels longer than it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/runtime/device.h"
#include "engine/runtime/prepared_task.h"

namespace twinflow::runtime {

// Seconds per kernel of every COMPUTE task's kernel, by plan::KernelKey (once per key), on
// inputs of its physical shapes (random floats, zero integers: valid indices and labels).
// Allocates `device`'s arena (once, for the largest task); the device must have none yet.
std::map<std::string, double> TimeKernels(const std::vector<PreparedTask>& tasks, Device& device,
                                          uint64_t seed);

// Bytes per second (read and written) of copying `bytes` within the device's memory, in an
// arena TimeKernels did not take (a fresh device).
double DeviceCopyBandwidth(Device& device, int64_t bytes);

}  // namespace twinflow::runtime
