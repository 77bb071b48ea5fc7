#pragma once
// The one answer to "how much memory per device": the compiled Plan's memory plans (the arena
// the runtime allocates and `sim` reports), per pipeline stage, with the planned peak split by
// what the registers hold (compiler/memory_categories.h). `twinflow memory` prints it and
// Python's memory() returns it.
#include <cstdint>
#include <vector>

#include "engine/compiler/memory_categories.h"
#include "engine/plan/plan.pb.h"
#include "models/strategy.h"

namespace twinflow::models {

struct DeviceMemory {
  int32_t device = 0;  // Plan device
  int64_t stage = 0;   // pipeline stage
  int64_t arena_bytes = 0;
  int64_t peak_bytes = 0;  // the most bytes live at once; arena_bytes - peak_bytes is layout slack
  compiler::CategoryBytes bytes{};  // peak_bytes by category; they sum to it
};

struct StageMemory {
  int64_t stage = 0;
  std::vector<int32_t> devices;  // Plan devices
  DeviceMemory fullest;          // the device with the largest arena (the lowest id on a tie)
};

// Every device of `plan`, its stage from `strategy` (an automatic strategy has one stage).
std::vector<DeviceMemory> DeviceMemories(const plan::Plan& plan, const Strategy& strategy);

// The devices grouped by stage, in stage order.
std::vector<StageMemory> StageMemories(const std::vector<DeviceMemory>& devices);

}  // namespace twinflow::models
