#include "engine/core/device_type.h"

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

}  // namespace twinflow
