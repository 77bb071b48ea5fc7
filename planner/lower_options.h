#pragma once
// What a strategy asks of the lowering: its micro-batches, schedule, overlap and buckets (the
// fetches, ranks and fold are the caller's).
#include "engine/compiler/lower.h"
#include "engine/parallel/strategy.h"

namespace twinflow::planner {

compiler::LowerOptions StrategyLowerOptions(const parallel::Strategy& strategy);

}  // namespace twinflow::planner
