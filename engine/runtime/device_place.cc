#include "engine/runtime/device_place.h"

namespace twinflow::runtime {

int GpuFor(const DevicePlace& place, int gpus) {
  return static_cast<int>((place.local_rank * place.count + place.slot) % gpus);
}

}  // namespace twinflow::runtime
