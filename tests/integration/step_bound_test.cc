// planner::StepTimeLowerBound, what `twinflow tune` skips strategies by before compiling them: it
// never exceeds the step time the simulator reports for a Plan compiled from the same graph,
// whatever the strategy, schedule, precision or cluster (so tune never skips a strategy that
// would rank), and it is not vacuous where compute dominates.
#include "planner/step_bound.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/compiler/compile.h"
#include "engine/ops/builtin_ops.h"
#include "engine/parallel/strategy.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "planner/lower_options.h"
#include "simulator/hardware/cluster.h"
#include "simulator/hardware/search_cost.h"
#include "simulator/sim_executor.h"

namespace twinflow {
namespace {

const graph::OpRegistry& Ops() {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  return registry;
}

struct Bounded {
  double bound = 0, step_s = 0;
};

models::GptConfig Config() {
  models::GptConfig config;
  config.layers = 4;
  config.hidden = 512;
  config.heads = 8;
  config.sequence = 256;
  config.vocab = 512;
  config.batch = 16;
  return config;
}

models::BuiltModel Build(const std::string& strategy, const sim::Topology& topology) {
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy(strategy);
  options.devices = topology.devices();
  if (topology.spec().device().kind() == sim::DEVICE_KIND_GPU) options.device = DeviceType::kCuda;
  return models::BuildGpt(Ops(), Config(), options);
}

// A GPT whose GEMMs are large enough for compute to matter on a GPU, on 8 devices; bounded
// from the profile of `profiled` (the same strategy but its micro-batches; empty: itself).
Bounded BoundAndSimulate(const std::string& strategy, const std::string& cluster, int nodes,
                         const std::string& profiled = "") {
  const sim::Topology topology(sim::Preset(cluster, nodes));
  const models::BuiltModel model = Build(strategy, topology);
  compiler::CompileOptions compile;
  compile.lower = planner::StrategyLowerOptions(model.strategy);
  compile.lower.fetches = {model.loss};
  const sbp::AlphaBetaCostModel cost(sim::SearchCostConfig(topology.spec()));
  const plan::Plan plan = compiler::Compile(model.graph, Ops(), cost, compile).plan;
  const sim::SimResult r = sim::Simulate(plan, topology, sim::SimOptions{});
  EXPECT_TRUE(r.finished) << strategy;
  const models::BuiltModel other = profiled.empty() ? model : Build(profiled, topology);
  const planner::WorkProfile profile =
      planner::ProfileWork(other.graph, Ops(), topology.spec(), other.strategy.micro_batches);
  return {planner::StepTimeLowerBound(profile, model.strategy.micro_batches), r.step_s};
}

TEST(StepBound, NeverAboveTheSimulatedStepOnAnyStrategy) {
  const char* strategies[] = {"dp=8",
                              "tp=8",
                              "dp=2,tp=4,sp=true",
                              "dp=4,tp=2,precision=bf16",
                              "pp=2,dp=4,mb=4",
                              "dp=4,tp=2,mb=4",
                              "pp=4,dp=2,mb=8",
                              "pp=4,dp=2,mb=4,schedule=gpipe",
                              "pp=2,tp=4,mb=4,schedule=zb-h1",
                              "pp=2,dp=4,mb=4,vp=2",
                              "dp=8,zero=1,recompute=full",
                              "pp=2,tp=2,dp=2,mb=2,recompute=selective,precision=bf16",
                              "auto"};
  for (const char* strategy : strategies) {
    for (const auto& [cluster, nodes] :
         {std::pair<std::string, int>{"dgx-h100", 1}, {"dgx-a100", 1}, {"cpu-local", 4}}) {
      const Bounded b = BoundAndSimulate(strategy, cluster, nodes);
      EXPECT_GT(b.bound, 0) << strategy << " on " << cluster;
      EXPECT_LE(b.bound, b.step_s) << strategy << " on " << cluster;
      ::testing::Test::RecordProperty(std::string(strategy) + " on " + cluster,
                                      std::to_string(b.bound / b.step_s));
    }
  }
}

TEST(StepBound, AProfileBoundsMoreMicroBatchesThanItsOwn) {
  // tune profiles a strategy once, at its fewest micro-batches, and bounds the others by it.
  for (const auto& [strategy, profiled] :
       {std::pair<std::string, std::string>{"dp=4,tp=2,mb=4", "dp=4,tp=2,mb=1"},
        {"pp=2,dp=4,mb=4", "pp=2,dp=4,mb=2"},
        {"pp=4,dp=2,mb=8", "pp=4,dp=2,mb=4"},
        {"pp=2,tp=4,mb=4,schedule=zb-h1", "pp=2,tp=4,mb=2,schedule=zb-h1"}}) {
    for (const std::string cluster : {"dgx-h100", "cpu-local"}) {
      const Bounded b =
          BoundAndSimulate(strategy, cluster, cluster == "cpu-local" ? 4 : 1, profiled);
      EXPECT_GT(b.bound, 0) << strategy << " on " << cluster;
      EXPECT_LE(b.bound, b.step_s) << strategy << " on " << cluster;
    }
  }
}

TEST(StepBound, NotVacuousWhereComputeDominates) {
  // Data parallelism on one A100 node: the step is mostly kernels.
  const Bounded b = BoundAndSimulate("dp=8", "dgx-a100", 1);
  EXPECT_GT(b.bound, 0.3 * b.step_s) << b.bound << " against " << b.step_s;
}

}  // namespace
}  // namespace twinflow
