// planner::VariableBytesFloor and planner::MemoryFloor, the floors tune drops strategies by before
// compiling them: neither exceeds the arena of a Plan compiled from the model, whatever the
// strategy, schedule or recomputation (so tune's early "out of memory" never drops a strategy
// that fits), and neither is vacuous.
#include "planner/memory_floor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "engine/compiler/compile.h"
#include "engine/ops/builtin_ops.h"
#include "engine/parallel/strategy.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "planner/lower_options.h"
#include "tests/support/tiny_gpt.h"

namespace twinflow {
namespace {

using namespace twinflow::parallel;  // the strategy
using namespace twinflow::planner;   // what the planner computes of it

const graph::OpRegistry& Ops() {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  return registry;
}

// The arena of the busiest device of `model` compiled as its strategy says.
int64_t CompiledArena(const models::BuiltModel& model) {
  compiler::CompileOptions compile;
  compile.lower = planner::StrategyLowerOptions(model.strategy);
  compile.lower.fetches = {model.loss};
  const plan::Plan plan =
      compiler::Compile(model.graph, Ops(), sbp::AlphaBetaCostModel(), compile).plan;
  int64_t arena = 0;
  for (const plan::MemoryPlan& m : plan.memory()) arena = std::max(arena, m.arena_bytes());
  return arena;
}

TEST(MemoryFloor, NeverAboveTheCompiledArenaOnAnyStrategy) {
  for (const std::string strategy :
       {"dp=4", "tp=4", "dp=2,tp=2", "pp=2,mb=2", "dp=2,pp=2,mb=2", "dp=4,zero=1",
        "dp=2,tp=2,zero=1,precision=bf16", "pp=2,vp=1,mb=4,recompute=full", "auto"}) {
    for (const std::string optimizer : {"adam:lr=0.01", "sgd:lr=0.1,momentum=0.9"}) {
      models::BuildOptions options;
      options.strategy = parallel::ParseStrategy(strategy);
      options.devices = 4;
      options.optimizer = graph::ParseOptimizer(optimizer);
      const models::BuiltModel model = models::BuildGpt(Ops(), testing::TinyGptConfig(), options);
      const int64_t arena = CompiledArena(model);
      const int64_t floor = planner::VariableBytesFloor(model, Ops());
      EXPECT_LE(floor, arena) << strategy << ", " << optimizer;
      // Adam's two moments and the weights are most of a tiny model's arena.
      EXPECT_GT(floor, arena / 20) << strategy << ", " << optimizer;
    }
  }
}

TEST(MemoryFloor, WithActivationsNeverAboveTheCompiledArena) {
  // A longer sequence than the tiny GPT's, so that activations weigh beside the variables.
  models::GptConfig config = testing::TinyGptConfig();
  config.layers = 4;
  config.sequence = 64;
  config.batch = 16;
  double largest_share = 0;
  for (const std::string strategy :
       {"dp=4", "tp=4", "dp=2,tp=2,sp=true", "dp=4,mb=4", "pp=2,dp=2,mb=4", "pp=4,mb=4",
        "pp=4,mb=8,schedule=gpipe", "pp=2,tp=2,mb=4,schedule=zb-h1", "pp=2,dp=2,mb=4,vp=2",
        "pp=2,dp=2,mb=2,recompute=full", "pp=2,tp=2,mb=4,recompute=selective,precision=bf16",
        "dp=4,zero=1,mb=2", "dp=4,recompute=full", "tp=4,mb=2,recompute=full",
        "pp=4,mb=8,schedule=gpipe,recompute=full", "pp=2,dp=2,mb=4,vp=2,recompute=full",
        "pp=2,tp=2,mb=4,schedule=zb-h1,recompute=full,precision=bf16", "auto"}) {
    models::BuildOptions options;
    options.strategy = parallel::ParseStrategy(strategy);
    options.devices = 4;
    const models::BuiltModel model = models::BuildGpt(Ops(), config, options);
    const int64_t arena = CompiledArena(model);
    const int64_t variables = planner::VariableBytesFloor(model, Ops());
    const int64_t floor =
        planner::MemoryFloor(planner::ProfileMemory(model, Ops()), model.strategy);
    EXPECT_LE(floor, arena) << strategy;
    EXPECT_GE(floor, variables) << strategy;
    largest_share = std::max(largest_share, static_cast<double>(floor - variables) / arena);
    ::testing::Test::RecordProperty(strategy, std::to_string(static_cast<double>(floor) / arena));
  }
  // The activations count: somewhere they are a good part of the arena.
  EXPECT_GT(largest_share, 0.2);
}

TEST(MemoryFloor, AProfileBoundsMoreMicroBatchesThanItsOwn) {
  // tune profiles a strategy once, at its fewest micro-batches, and weighs the others by it.
  models::GptConfig config = testing::TinyGptConfig();
  config.layers = 4;
  config.sequence = 64;
  config.batch = 16;
  for (const auto& [strategy, profiled] :
       {std::pair<std::string, std::string>{"dp=4,mb=4", "dp=4,mb=1"},
        {"pp=2,dp=2,mb=4", "pp=2,dp=2,mb=2"},
        {"pp=4,mb=8,schedule=gpipe", "pp=4,mb=4,schedule=gpipe"},
        {"pp=2,dp=2,mb=8,vp=2", "pp=2,dp=2,mb=2,vp=2"},
        {"pp=2,dp=2,mb=8,recompute=full", "pp=2,dp=2,mb=2,recompute=full"}}) {
    models::BuildOptions options;
    options.devices = 4;
    options.strategy = parallel::ParseStrategy(strategy);
    const models::BuiltModel model = models::BuildGpt(Ops(), config, options);
    options.strategy = parallel::ParseStrategy(profiled);
    const models::BuiltModel other = models::BuildGpt(Ops(), config, options);
    const int64_t floor =
        planner::MemoryFloor(planner::ProfileMemory(other, Ops()), model.strategy);
    EXPECT_LE(floor, CompiledArena(model)) << strategy;
    EXPECT_GT(floor, planner::VariableBytesFloor(model, Ops())) << strategy;
  }
}

}  // namespace
}  // namespace twinflow
