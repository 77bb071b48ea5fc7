#include "planner/throughput.h"

#include <algorithm>

namespace twinflow::planner {

int64_t SamplesPerStep(const models::BuiltModel& model) {
  if (model.feeds.empty()) return 1;
  const auto op = model.graph.FindOp(model.feeds.front());
  const Shape& shape = model.graph.tensor(model.graph.op(*op).outputs[0]).meta.shape;
  return (shape.rank() > 0 ? shape[0] : 1) * model.strategy.micro_batches;
}

StepWork StepWorkOf(const models::BuiltModel& model) {
  return {SamplesPerStep(model), model.tokens_per_step, model.model_flops_per_step};
}

Throughput ThroughputOf(const StepWork& work, double step_s, double mfu, int64_t devices) {
  Throughput t;
  t.step_s = step_s;
  const double step = std::max(step_s, 1e-12);
  const double per_device = step * static_cast<double>(std::max<int64_t>(1, devices));
  t.samples_per_s = static_cast<double>(work.samples) / step;
  t.tokens_per_device_s = static_cast<double>(work.tokens) / per_device;
  t.model_flops_per_device_s = work.model_flops / per_device;
  t.mfu = mfu;
  return t;
}

Throughput ThroughputOf(const models::BuiltModel& model, const sim::SimResult& result,
                        int64_t devices) {
  return ThroughputOf(StepWorkOf(model), result.step_s, result.mfu, devices);
}

}  // namespace twinflow::planner
