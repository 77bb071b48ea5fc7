#pragma once
// The one answer to "how much memory per device": the compiled Plan's memory plans (the arena
// the runtime allocates and `sim` reports), per pipeline stage, with the planned peak split by
// what the registers hold (compiler/memory_categories.h). `twinflow memory` prints it and
// Python's memory() returns it.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/compiler/memory_categories.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::planner {

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

// Every device of `plan`, its stage the lowest its tasks run (Task.stage, the compiler's one
// derivation of stages: a device of an interleaved pipeline runs several chunks, and is
// labelled by its first). From the Plan, not a strategy: a Python graph's stages are where
// set_stage put its ops.
std::vector<DeviceMemory> DeviceMemories(const plan::Plan& plan);

// The devices grouped by stage, in stage order.
std::vector<StageMemory> StageMemories(const std::vector<DeviceMemory>& devices);

// One register of a device, for "what holds the memory" (`twinflow memory --top N`).
struct RegisterMemory {
  int64_t regst = 0;
  std::string producer;  // the producing task's name
  compiler::MemoryCategory category = compiler::MemoryCategory::kActivations;
  int64_t bytes_per_slot = 0;
  int32_t slots = 0;
  // Lives inside a chain and shares bytes with the chain's registers whose spans miss its own
  // (plan_memory.h); otherwise its slots have bytes of their own for the whole run.
  bool shared = false;
};

// The `n` registers of `device` holding the most bytes (bytes_per_slot x slots): those with
// bytes of their own first, then those sharing a chain's, each largest first, ties by register
// id. An in-place REPEAT's output (its input's bytes) is left out.
std::vector<RegisterMemory> LargestRegisters(const plan::Plan& plan, int32_t device, int64_t n);

}  // namespace twinflow::planner
