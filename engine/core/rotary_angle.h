#pragma once
// The angle of rotary position embedding (Su et al. 2021), in one place for the CPU and CUDA
// kernels: pair i of a head of width head_dim, at sequence position p, turns by
// p * theta^(-2i / head_dim). Computed in double: at position 8191 an f32 angle would be off by
// about 5e-4 radians.
#include <cmath>
#include <cstdint>

#include "engine/core/host_device.h"

namespace twinflow::rotary {

TWINFLOW_HOST_DEVICE double Angle(int64_t position, int64_t pair, int64_t head_dim, double theta) {
  return static_cast<double>(position) *
         pow(theta, -2.0 * static_cast<double>(pair) / static_cast<double>(head_dim));
}

}  // namespace twinflow::rotary
