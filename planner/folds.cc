#include "planner/folds.h"

#include <numeric>

namespace twinflow::planner {

plan::DeviceFold DataParallelFold(const parallel::Strategy& strategy, int64_t devices_per_node) {
  if (strategy.automatic || devices_per_node < 1) return {};
  const int64_t block = strategy.dp * strategy.tp;
  const int64_t stride = std::lcm(strategy.tp, devices_per_node);
  if (block % stride != 0 || block / stride < 2) return {};
  return {static_cast<int>(block / stride), stride, block};
}

plan::DeviceFold ReplicaFold(const parallel::Strategy& strategy) {
  if (strategy.automatic || strategy.dp < 2) return {};
  return {static_cast<int>(strategy.dp), strategy.tp, strategy.dp * strategy.tp};
}

}  // namespace twinflow::planner
