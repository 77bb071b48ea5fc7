// Planning time of PlanBoxing as meshes grow from 8 to 1024 devices. The compiler plans one
// boxing per mismatched edge of a graph, so this time multiplies by the edge count and by
// every candidate the SBP search prices.
//
// Counters: steps (plan length), transfers (send/recv copies in the plan), cross_MiB (bytes
// between devices) and est_us (the cost model's estimate of the plan's run time).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "engine/core/shape.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "engine/sbp/boxing_planner.h"
#include "engine/sbp/layout.h"

namespace twinflow::sbp {
namespace {

const Shape kShape = {4096, 4096};

// "cpu:<first>-<first+n-1> [dims] <nd_sbp>"
Layout MakeLayout(int64_t first, int64_t n, const std::string& hierarchy,
                  const std::string& nd_sbp) {
  std::string text = "cpu:" + std::to_string(first);
  if (n > 1) text += "-" + std::to_string(first + n - 1);
  return ParseLayout(text + " " + hierarchy + " " + nd_sbp);
}

std::string Dims(std::initializer_list<int64_t> dims) {
  std::string text = "[";
  for (int64_t d : dims) text += (text.size() > 1 ? "," : "") + std::to_string(d);
  return text + "]";
}

void RunPlanner(benchmark::State& state, const Layout& src, const Layout& dst) {
  const AlphaBetaCostModel cost_model;
  BoxingPlan plan;
  for (auto _ : state) {
    plan = PlanBoxing(kShape, DType::kF32, src, dst, cost_model);
    benchmark::DoNotOptimize(plan);
  }
  int64_t transfers = 0;
  for (const BoxingStep& step : plan.steps) {
    transfers += static_cast<int64_t>(step.transfers.size());
  }
  state.counters["devices"] = static_cast<double>(src.placement.size());
  state.counters["steps"] = static_cast<double>(plan.steps.size());
  state.counters["transfers"] = static_cast<double>(transfers);
  state.counters["cross_MiB"] = static_cast<double>(plan.cross_device_bytes()) / (1 << 20);
  state.counters["est_us"] = plan.time() * 1e6;
}

void BM_1D_SplitToBroadcast(benchmark::State& state) {
  const int64_t n = state.range(0);
  RunPlanner(state, MakeLayout(0, n, Dims({n}), "S(0)"), MakeLayout(0, n, Dims({n}), "B"));
}

void BM_1D_PartialToSplit(benchmark::State& state) {
  const int64_t n = state.range(0);
  RunPlanner(state, MakeLayout(0, n, Dims({n}), "P"), MakeLayout(0, n, Dims({n}), "S(1)"));
}

void BM_2D_SplitPartialToBroadcastSplit(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::string mesh = Dims({n / 8, 8});
  RunPlanner(state, MakeLayout(0, n, mesh, "(S(0),P)"), MakeLayout(0, n, mesh, "(B,S(1))"));
}

// [n/(k*k), k, k]: 8 -> [2,2,2], 64 -> [4,4,4], 256 -> [4,8,8], 1024 -> [4,16,16].
void BM_3D_Mixed(benchmark::State& state) {
  const int64_t n = state.range(0);
  int64_t k = 2;
  while (4 * (2 * k) * (2 * k) <= n) k *= 2;
  const std::string mesh = Dims({n / (k * k), k, k});
  RunPlanner(state, MakeLayout(0, n, mesh, "(S(0),S(1),P)"),
             MakeLayout(0, n, mesh, "(S(1),B,S(0))"));
}

// Between disjoint placements of the same size but a different hierarchy: only send/recv (or a
// path through intermediate layouts) can connect them.
void BM_CrossPlacement(benchmark::State& state) {
  const int64_t n = state.range(0);
  RunPlanner(state, MakeLayout(0, n, Dims({n}), "S(0)"),
             MakeLayout(n, n, Dims({n / 8, 8}), "(S(1),B)"));
}

void MeshSizes(benchmark::internal::Benchmark* bench) {
  for (int64_t n : {8, 64, 256, 1024}) bench->Arg(n);
  bench->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_1D_SplitToBroadcast)->Apply(MeshSizes);
BENCHMARK(BM_1D_PartialToSplit)->Apply(MeshSizes);
BENCHMARK(BM_2D_SplitPartialToBroadcastSplit)->Apply(MeshSizes);
BENCHMARK(BM_3D_Mixed)->Apply(MeshSizes);
BENCHMARK(BM_CrossPlacement)->Apply(MeshSizes);

}  // namespace
}  // namespace twinflow::sbp

BENCHMARK_MAIN();
