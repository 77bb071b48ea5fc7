#include "planner/lower_options.h"

namespace twinflow::planner {

compiler::LowerOptions StrategyLowerOptions(const parallel::Strategy& strategy) {
  compiler::LowerOptions options;
  options.micro_batches = strategy.micro_batches;
  options.schedule = strategy.schedule;
  options.overlap = strategy.overlap;
  options.bucket_bytes = strategy.bucket_mib << 20;
  return options;
}

}  // namespace twinflow::planner
