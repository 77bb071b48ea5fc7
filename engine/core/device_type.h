#pragma once
// The kinds of device a tensor can live on. Kernels are registered per device type.
namespace twinflow {

enum class DeviceType { kCpu, kCuda };
const char* DeviceTypeName(DeviceType type);  // "cpu", "cuda"

}  // namespace twinflow
