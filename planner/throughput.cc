#include "planner/throughput.h"

#include <algorithm>

namespace twinflow::planner {

int64_t SamplesPerStep(const models::BuiltModel& model) {
  if (model.feeds.empty()) return 1;
  const auto op = model.graph.FindOp(model.feeds.front());
  const Shape& shape = model.graph.tensor(model.graph.op(*op).outputs[0]).meta.shape;
  return (shape.rank() > 0 ? shape[0] : 1) * model.strategy.micro_batches;
}

Throughput ThroughputOf(const models::BuiltModel& model, const sim::SimResult& result,
                        int64_t devices) {
  Throughput t;
  t.step_s = result.step_s;
  const double step = std::max(result.step_s, 1e-12);
  const double per_device = step * static_cast<double>(std::max<int64_t>(1, devices));
  t.samples_per_s = static_cast<double>(SamplesPerStep(model)) / step;
  t.tokens_per_device_s = static_cast<double>(model.tokens_per_step) / per_device;
  t.model_flops_per_device_s = model.model_flops_per_step / per_device;
  t.mfu = result.mfu;
  return t;
}

}  // namespace twinflow::planner
