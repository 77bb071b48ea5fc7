#pragma once
// Fitting the simulator's device model to what `twinflow calibrate` measured on an
// accelerator (engine/runtime/device_timing.h): the measured kernels go into the kernel table
// as they are (the simulator takes a measured key's time over its roofline), and each kernel
// class's efficiency is fitted from them, so the Plan's other shapes are priced from what
// this device reached. The inverse of ActTiming's roofline: a class's efficiency is the
// ideal time of its kernels (at efficiency 1) over their measured time, summed over kernels
// long enough that the launch does not dominate.
#include <map>
#include <string>
#include <vector>

#include "engine/plan/plan.pb.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::sim {

struct DeviceMeasurements {
  std::map<std::string, double> kernel_seconds;  // by plan::KernelKey
  double copy_bandwidth = 0;                     // bytes per second, read and written
  double launch_overhead_s = 0;                  // the runtime's cost per act beyond its kernel
};

// One kernel class's fit: the efficiency set (0 when none of its kernels qualified and the
// spec's value stands) and how many kernels it came from.
struct ClassFit {
  plan::KernelClass kernel_class = plan::KERNEL_CLASS_UNSPECIFIED;
  double efficiency = 0;
  int kernels = 0;
};

// Sets spec.device from `measured` on `plan`'s COMPUTE tasks (each key once): the kernel
// table, launch_overhead_s, memory_efficiency (the copy bandwidth over the nominal
// memory_bandwidth), and the efficiencies of GEMMs (flops_efficiency, their flops weighted by
// the spec's tile model), fused attention, activations and row-wise kernels from their
// kernels of at least `min_seconds`. Every efficiency is kept in (0, 1]. The nominal peak
// flops and bandwidth are the spec's (a preset's data sheet); kind becomes GPU.
std::vector<ClassFit> FitDeviceModel(const plan::Plan& plan, const DeviceMeasurements& measured,
                                     ClusterSpec& spec, double min_seconds = 50e-6);

}  // namespace twinflow::sim
