// MakeDevice: a HostDevice for cpu devices; a CudaDevice for cuda devices in a CUDA build.
#include <memory>

#include "engine/core/error.h"
#include "engine/runtime/device.h"
#include "engine/runtime/host_device.h"
#ifdef TWINFLOW_HAVE_CUDA
#include "engine/runtime/cuda/cuda_device.h"
#endif

namespace twinflow::runtime {

std::unique_ptr<Device> MakeDevice(const plan::Device& device, const DevicePlace& place) {
  return MakeDeviceWith(device, place, DeviceOptions{});
}

std::unique_ptr<Device> MakeDeviceWith(const plan::Device& device, const DevicePlace& place,
                                       const DeviceOptions& options) {
  if (device.type() == plan::DEVICE_CPU) return std::make_unique<HostDevice>(device.index());
  if (device.type() == plan::DEVICE_CUDA) {
#ifdef TWINFLOW_HAVE_CUDA
    return std::make_unique<CudaDevice>(device.index(), place, options.allow_tf32);
#else
    (void)place;
    (void)options;
    throw InvalidArgumentError("device cuda:" + std::to_string(device.index()) +
                               ": this build of twinflow has no CUDA (configure with "
                               "TWINFLOW_CUDA=ON on a machine with the CUDA toolkit)");
#endif
  }
  throw PlanError("device " + std::to_string(device.id()) + " has an unknown type");
}

}  // namespace twinflow::runtime
