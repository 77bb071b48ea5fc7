#include "engine/runtime/device_place.h"

namespace twinflow::runtime {

int GpuFor(const DevicePlace& place, int gpus) {
  return static_cast<int>((place.local_rank * place.count + place.slot) % gpus);
}

std::vector<DevicePlace> DevicePlaces(const plan::Plan& plan, int rank, int local_rank) {
  int64_t count = 0;
  for (const plan::Device& d : plan.devices()) count += d.rank() == rank;
  std::vector<DevicePlace> places(static_cast<size_t>(plan.devices_size()));
  int64_t slot = 0;
  for (int d = 0; d < plan.devices_size(); ++d) {
    if (plan.devices(d).rank() == rank) places[d] = DevicePlace{local_rank, slot++, count};
  }
  return places;
}

}  // namespace twinflow::runtime
