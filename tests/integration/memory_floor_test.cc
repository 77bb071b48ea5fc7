// models::VariableBytesFloor, the floor tune drops strategies by before compiling them: it never
// exceeds the arena of a Plan compiled from the model, whatever the strategy (so tune's early
// "out of memory" never drops a strategy that fits), and it is not vacuous.
#include "models/memory_floor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "engine/compiler/compile.h"
#include "engine/ops/builtin_ops.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "models/strategy.h"
#include "tests/support/tiny_gpt.h"

namespace twinflow {
namespace {

const graph::OpRegistry& Ops() {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  return registry;
}

TEST(MemoryFloor, NeverAboveTheCompiledArenaOnAnyStrategy) {
  for (const std::string strategy :
       {"dp=4", "tp=4", "dp=2,tp=2", "pp=2,mb=2", "dp=2,pp=2,mb=2", "dp=4,zero=1",
        "dp=2,tp=2,zero=1,precision=bf16", "pp=2,vp=1,mb=4,recompute=full", "auto"}) {
    for (const std::string optimizer : {"adam:lr=0.01", "sgd:lr=0.1,momentum=0.9"}) {
      models::BuildOptions options;
      options.strategy = models::ParseStrategy(strategy);
      options.devices = 4;
      options.optimizer = graph::ParseOptimizer(optimizer);
      const models::BuiltModel model = models::BuildGpt(Ops(), testing::TinyGptConfig(), options);
      compiler::CompileOptions compile;
      compile.lower = models::StrategyLowerOptions(model.strategy);
      compile.lower.fetches = {model.loss};
      const plan::Plan plan =
          compiler::Compile(model.graph, Ops(), sbp::AlphaBetaCostModel(), compile).plan;
      int64_t arena = 0;
      for (const plan::MemoryPlan& m : plan.memory()) arena = std::max(arena, m.arena_bytes());
      const int64_t floor = models::VariableBytesFloor(model, Ops());
      EXPECT_LE(floor, arena) << strategy << ", " << optimizer;
      // Adam's two moments and the weights are most of a tiny model's arena.
      EXPECT_GT(floor, arena / 20) << strategy << ", " << optimizer;
    }
  }
}

}  // namespace
}  // namespace twinflow
