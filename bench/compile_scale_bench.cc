// How fast the compiler handles GPT-3 175B strategies on 1,024 devices.
//
// BM_CompileGpt3/layers:L/mb:M/fold:F: GPT-3 175B with L of its 96 layers, dp=8,tp=8,pp=16, M
// micro-batches, 1F1B, compiled (SBP search, lowering, memory plan, validation) for 128
// DGX-H100 nodes with the search cost the simulator uses; F = 1 folds the Plan as `sim` does
// (one of the 8 data-parallel copies lowered,
// docs/compiler.md#folding-one-data-parallel-copy-for-the-simulator). Counters: tasks and registers
// of the Plan, and its first device's arena. docs/sbp_search.md has the figures (16 layers: 25.3 s
// before the per-edge pricing, 14.3 s after).
#include <benchmark/benchmark.h>

#include "engine/compiler/compile.h"
#include "engine/ops/builtin_ops.h"
#include "engine/parallel/strategy.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "planner/folds.h"
#include "simulator/hardware/cluster.h"
#include "simulator/hardware/search_cost.h"

namespace twinflow {
namespace {

void BM_CompileGpt3(benchmark::State& state) {
  const graph::OpRegistry registry = ops::BuiltinOps();
  models::GptConfig config = models::GptConfig::Gpt3_175B();
  config.layers = state.range(0);
  models::BuildOptions options;
  options.devices = 1024;
  options.strategy =
      parallel::ParseStrategy("dp=8,tp=8,pp=16,mb=" + std::to_string(state.range(1)));
  const sbp::AlphaBetaCostModel cost(sim::SearchCostConfig(sim::Preset("dgx-h100", 128)));
  plan::Plan plan;
  for (auto _ : state) {
    const models::BuiltModel model = models::BuildGpt(registry, config, options);
    compiler::CompileOptions compile;
    compile.lower.fetches = {model.loss};
    compile.lower.micro_batches = model.strategy.micro_batches;
    compile.lower.schedule = parallel::Schedule::kOneFOneB;
    if (state.range(2) != 0) compile.lower.fold = planner::DataParallelFold(model.strategy, 8);
    plan = compiler::Compile(model.graph, registry, cost, compile).plan;
  }
  state.counters["tasks"] = static_cast<double>(plan.tasks_size());
  state.counters["regsts"] = static_cast<double>(plan.regsts_size());
  state.counters["arena_gib"] = static_cast<double>(plan.memory(0).arena_bytes()) / (1 << 30);
}

BENCHMARK(BM_CompileGpt3)
    ->ArgNames({"layers", "mb", "fold"})
    ->Args({16, 16, 0})
    ->Args({16, 16, 1})
    ->Args({96, 64, 1})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace twinflow

BENCHMARK_MAIN();
