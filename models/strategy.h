#pragma once
// Strategy: how a model is parallelised, from a string such as
// "dp=2,tp=2,pp=1,mb=4,schedule=1f1b" or "auto".
//   dp  data-parallel degree: the batch is split over it
//   tp  tensor-parallel degree: Megatron-style, weights split column- then row-wise
//   pp  pipeline stages: consecutive layers on consecutive groups of dp*tp devices
//   mb  micro-batches per step (the pipeline schedule's unit)
//   schedule  gpipe | 1f1b
//   recompute none | full: full activation recomputation, each layer's forward run again in
//             the backward pass instead of keeping its activations (graph/autograd.h)
// "auto" leaves every layout to the SBP search on one placement (`hierarchy`).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/shape.h"
#include "engine/sbp/placement.h"

namespace twinflow::models {

enum class Schedule { kGPipe, kOneFOneB };
const char* ScheduleName(Schedule schedule);  // "gpipe", "1f1b"

struct Strategy {
  bool automatic = false;
  int64_t dp = 1;
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t micro_batches = 1;
  Schedule schedule = Schedule::kOneFOneB;
  bool recompute = false;
  Shape hierarchy;  // automatic only; empty: 1-D over all devices

  int64_t devices() const { return dp * tp * pp; }
  std::string ToString() const;
  // The placement of pipeline stage `stage` (automatic: the one placement) on `devices`
  // devices of `type`: [dp, tp] over a contiguous range of ids.
  sbp::Placement StagePlacement(int64_t stage, int64_t devices,
                                DeviceType type = DeviceType::kCpu) const;
  // Throws InvalidArgumentError naming the field when the degrees do not multiply to
  // `devices` or the automatic hierarchy does not.
  void CheckDevices(int64_t devices) const;
};

// Throws InvalidArgumentError naming the bad field: unknown keys, non-positive or malformed
// numbers, an unknown schedule, a repeated key.
Strategy ParseStrategy(const std::string& text);

}  // namespace twinflow::models
