#include "engine/core/device_type.h"

#include <string>

#include "engine/core/error.h"

namespace twinflow {

const char* DeviceTypeName(DeviceType type) {
  switch (type) {
    case DeviceType::kCpu:
      return "cpu";
    case DeviceType::kCuda:
      return "cuda";
  }
  return "?";
}

DeviceType ParseDeviceType(std::string_view text) {
  for (DeviceType type : {DeviceType::kCpu, DeviceType::kCuda}) {
    if (text == DeviceTypeName(type)) return type;
  }
  throw InvalidArgumentError("unknown device type '" + std::string(text) +
                             "' (expected cpu or cuda)");
}

}  // namespace twinflow
