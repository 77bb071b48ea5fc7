#pragma once
// A simulated step in the units published training runs report: samples/s, tokens/s per device,
// the model's TFLOP/s per device (models/model_flops.h: Megatron's count) and MFU.
#include <cstdint>

#include "models/model.h"
#include "simulator/sim_executor.h"

namespace twinflow::planner {

struct Throughput {
  double step_s = 0;
  double samples_per_s = 0;
  double tokens_per_device_s = 0;       // 0 for a model without a sequence
  double model_flops_per_device_s = 0;  // 0 where the model's count is not known
  double mfu = 0;                       // the simulator's: COMPUTE flops over time x devices x peak
};

// The first feed's leading extent times the micro-batches per step.
int64_t SamplesPerStep(const models::BuiltModel& model);

// What a model does in a step, whatever its strategy: samples, tokens, Megatron's flops.
struct StepWork {
  int64_t samples = 0, tokens = 0;
  double model_flops = 0;
};
StepWork StepWorkOf(const models::BuiltModel& model);

// `devices`: the physical devices the step ran on (the cluster's, or the model's).
Throughput ThroughputOf(const StepWork& work, double step_s, double mfu, int64_t devices);
Throughput ThroughputOf(const models::BuiltModel& model, const sim::SimResult& result,
                        int64_t devices);

}  // namespace twinflow::planner
