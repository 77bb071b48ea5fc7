#pragma once
// The kinds of device a tensor can live on. Kernels are registered per device type.
#include <string_view>

namespace twinflow {

enum class DeviceType { kCpu, kCuda };
const char* DeviceTypeName(DeviceType type);        // "cpu", "cuda"
DeviceType ParseDeviceType(std::string_view text);  // InvalidArgumentError naming the text

}  // namespace twinflow
