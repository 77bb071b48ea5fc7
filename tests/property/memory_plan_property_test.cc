// Properties of chain ordering and lifetime-based memory plans (engine/compiler/task_chains.h,
// plan_memory.h) over random valid Plans: the planned Plan still validates, still terminates
// under random message orders with every actor acting as often as before, and no slot is
// ever overwritten through shared bytes while a reader still needs it: not by collectives
// floating beside their chain (which random delivery runs at any time they may), not by an
// in-place all_reduce beyond its own input, and not by the producer of an in-place REPEAT's
// input while a piece repeated from it is still read.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "engine/compiler/plan_memory.h"
#include "engine/compiler/slot_counts.h"
#include "engine/compiler/task_chains.h"
#include "engine/core/rng.h"
#include "engine/plan/memory_overlaps.h"
#include "engine/plan/plan_validate.h"
#include "engine/runtime/test_executor.h"
#include "tests/support/random_plan.h"

namespace twinflow::compiler {
namespace {

RC_GTEST_PROP(MemoryPlanProperty, OrderedChainsTerminateAndSharedBytesAreNeverClobbered, ()) {
  Rng rng(*rc::gen::arbitrary<uint64_t>());
  testing::RandomPlanOptions options;
  options.max_tasks = *rc::gen::inRange(4, 28);
  options.lags = *rc::gen::arbitrary<bool>();  // many lagged Plans get no chains
  options.rate_changes = *rc::gen::arbitrary<bool>();
  const plan::Plan original = testing::RandomPlan(rng, options);
  const int64_t steps = *rc::gen::inRange<int64_t>(1, 4);
  plan::Plan planned = original;
  const std::vector<TaskChain> chains = FindTaskChains(planned);
  OrderChains(planned, chains);
  DecideSlotCounts(planned, chains, std::nullopt);
  PlanMemory(planned, chains);
  plan::ValidatePlan(planned);

  const runtime::SourcePiecesFn pieces = [&](int64_t t) {
    return testing::SourcePieces(original, t, steps);
  };
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const runtime::TestRunResult before = runtime::RunWithRandomDelivery(original, pieces, seed);
  const runtime::TestRunResult after = runtime::RunWithRandomDelivery(planned, pieces, seed);
  RC_ASSERT(before.finished);
  RC_LOG() << after.report << "\n";
  for (const std::string& v : after.violations) RC_LOG() << v << "\n";
  RC_ASSERT(after.finished);
  RC_ASSERT(after.violations.empty());
  RC_ASSERT(after.acts == before.acts);
  int64_t shared = 0;
  for (const plan::MemoryPlan& m : planned.memory()) {
    RC_ASSERT(m.peak_bytes() <= m.arena_bytes());
    shared += static_cast<int64_t>(plan::OverlappingSlots(planned, m).size());
  }
  int64_t floating = 0;
  for (const TaskChain& chain : chains) floating += static_cast<int64_t>(chain.floating.size());
  int64_t in_place = 0, repeats_in_place = 0;
  for (const plan::Task& t : planned.tasks()) {
    in_place += t.collective().in_place() ? 1 : 0;
    repeats_in_place += t.repeat_in_place() ? 1 : 0;
  }
  RC_TAG(chains.empty() ? "no chain" : "chains", shared > 0 ? "bytes shared" : "no sharing",
         floating > 0 ? "collectives floating" : "none floating",
         in_place > 0 ? "summed in place" : "none in place",
         repeats_in_place > 0 ? "repeated in place" : "no repeat in place");
}

}  // namespace
}  // namespace twinflow::compiler
