// The SBP search on real training graphs: it picks data parallelism for a 2-layer MLP whose
// batch dominates and Megatron-style tensor parallelism (weights split, one all-reduce in the
// forward block) when the weights dominate; it honours pins and the memory limit.
#include "engine/compiler/sbp_search.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "engine/sbp/boxing_planner.h"
#include "models/model.h"
#include "tests/support/op_test_helpers.h"
#include "tests/support/tiny_gpt.h"

namespace twinflow::compiler {
namespace {

using testing::BuiltinRegistry;

models::BuiltModel Mlp(std::vector<int64_t> widths, int64_t batch, const std::string& strategy,
                       int64_t devices) {
  models::MlpConfig config;
  config.widths = std::move(widths);
  config.batch = batch;
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy(strategy);
  options.devices = devices;
  return models::BuildMlp(BuiltinRegistry(), config, options);
}

sbp::NdSbp LayoutOf(const models::BuiltModel& m, const SbpAssignment& a, const std::string& op) {
  return ProducedLayout(m.graph, a, m.graph.op(*m.graph.FindOp(op)).outputs[0]).nd_sbp;
}

// all_reduce steps in boxings feeding forward ops (those not created by autograd/optimizer).
int ForwardAllReduces(const models::BuiltModel& m, const SbpAssignment& a) {
  int count = 0;
  for (const BoxingEdge& edge : a.boxings) {
    const std::string& name = m.graph.op(edge.consumer).name;
    if (name.rfind("layer", 0) != 0 || name.find("/grad") != std::string::npos ||
        name.find("sgd") != std::string::npos || name.find("assign") != std::string::npos) {
      continue;
    }
    for (const sbp::BoxingStep& step : edge.plan->steps) {
      count += step.kind == sbp::BoxingStepKind::kAllReduce;
    }
  }
  return count;
}

TEST(SbpSearch, PicksDataParallelismWhenTheBatchDominates) {
  const models::BuiltModel m = Mlp({256, 256, 16}, 1 << 15, "auto", 4);
  const SbpAssignment a = SearchSbp(m.graph, BuiltinRegistry(), sbp::AlphaBetaCostModel());
  EXPECT_TRUE(a.exact);
  EXPECT_EQ(LayoutOf(m, a, "x").ToString(), "S(0)");
  EXPECT_EQ(LayoutOf(m, a, "layer0/weight").ToString(), "B");
  EXPECT_EQ(LayoutOf(m, a, "layer1/weight").ToString(), "B");
  EXPECT_EQ(ForwardAllReduces(m, a), 0);
}

TEST(SbpSearch, PicksMegatronTensorParallelismWhenTheWeightsDominate) {
  const models::BuiltModel m = Mlp({4096, 8192, 4096}, 8, "auto", 4);
  const SbpAssignment a = SearchSbp(m.graph, BuiltinRegistry(), sbp::AlphaBetaCostModel());
  EXPECT_TRUE(a.exact);
  EXPECT_EQ(LayoutOf(m, a, "layer0/weight").ToString(), "S(1)");  // column-parallel
  EXPECT_EQ(LayoutOf(m, a, "layer1/weight").ToString(), "S(0)");  // row-parallel
  EXPECT_EQ(ForwardAllReduces(m, a), 1);
}

TEST(SbpSearch, NeverWorseThanPureDataParallelism) {
  const models::BuiltModel m = Mlp({512, 1024, 64}, 256, "auto", 4);
  const sbp::AlphaBetaCostModel cost;
  SbpSearchOptions dp;
  dp.data_parallel_only = true;
  const double best = SearchSbp(m.graph, BuiltinRegistry(), cost).cost();
  EXPECT_LE(best, SearchSbp(m.graph, BuiltinRegistry(), cost, dp).cost() * (1 + 1e-9));
}

TEST(SbpSearch, HonoursPins) {
  const models::BuiltModel m = Mlp({64, 128, 16}, 32, "dp=2,tp=2", 4);
  const SbpAssignment a = SearchSbp(m.graph, BuiltinRegistry(), sbp::AlphaBetaCostModel());
  EXPECT_EQ(LayoutOf(m, a, "x").ToString(), "(S(0),B)");
  EXPECT_EQ(LayoutOf(m, a, "layer0/weight").ToString(), "(B,S(1))");
  EXPECT_EQ(LayoutOf(m, a, "layer1/weight").ToString(), "(B,S(0))");
}

TEST(SbpSearch, MemoryLimitShardsWhatDoesNotFitAndFailsClearlyWhenNothingDoes) {
  // Data parallelism is cheapest here but replicates 16 MiB weights and their state; the
  // leanest layout needs about 60% of its memory.
  const models::BuiltModel m = Mlp({2048, 2048, 2048}, 4096, "auto", 4);
  const sbp::AlphaBetaCostModel cost;
  SbpSearchOptions loose;
  const double unlimited = SearchSbp(m.graph, BuiltinRegistry(), cost, loose).peak_memory;
  SbpSearchOptions tight;
  tight.memory_limit = unlimited * 0.85;
  const SbpAssignment fitted = SearchSbp(m.graph, BuiltinRegistry(), cost, tight);
  EXPECT_LE(fitted.peak_memory, tight.memory_limit);
  SbpSearchOptions impossible;
  impossible.memory_limit = 1024;
  try {
    SearchSbp(m.graph, BuiltinRegistry(), cost, impossible);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("largest tensors"), std::string::npos) << e.what();
  }
}

TEST(SbpSearch, PinsThatNoSignatureHonourNameTheOp) {
  models::MlpConfig config;
  config.widths = {8, 8};
  config.batch = 4;
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy("auto");
  options.devices = 2;
  options.training = false;
  graph::GraphBuilder builder(BuiltinRegistry(), options.strategy.StagePlacement(0, 2));
  const graph::TensorId x = builder.Input("x", Shape{4, 8});
  const graph::TensorId y = builder.Add1("relu", {x}, {}, "act");
  builder.Pin(y, sbp::NdSbp({sbp::Sbp::Partial()}));  // relu cannot produce a partial sum
  try {
    SearchSbp(builder.graph(), BuiltinRegistry(), sbp::AlphaBetaCostModel());
    FAIL() << "expected SbpError";
  } catch (const SbpError& e) {
    EXPECT_NE(std::string(e.what()).find("'act'"), std::string::npos) << e.what();
  }
}

// Boxing plans are made once per (tensor, layouts shifted by whole nodes) and shifted back:
// every edge of a pipelined GPT, whose second stage repeats the first's edges on devices a
// node further, gets exactly the plan planned for its own layouts.
TEST(SbpSearch, ShiftedBoxingPlansEqualThosePlannedDirectly) {
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy("dp=2,tp=2,pp=2,mb=2");
  options.devices = 8;
  const models::BuiltModel m =
      models::BuildGpt(BuiltinRegistry(), testing::TinyGptConfig(), options);
  sbp::AlphaBetaConfig config;
  config.devices_per_node = 2;  // stage 1 lies two nodes past stage 0
  const sbp::AlphaBetaCostModel cost(config);
  const SbpAssignment a = SearchSbp(m.graph, BuiltinRegistry(), cost);
  int shifted = 0;
  for (const BoxingEdge& edge : a.boxings) {
    const graph::TensorNode& tensor = m.graph.tensor(edge.tensor);
    const sbp::BoxingPlan want =
        sbp::PlanBoxing(tensor.meta.shape, tensor.meta.dtype, edge.plan->src, edge.plan->dst, cost);
    shifted += edge.plan->src.placement.device_ids()[0] >= 2;
    ASSERT_EQ(edge.plan->steps.size(), want.steps.size()) << tensor.name;
    EXPECT_EQ(edge.plan->time(), want.time()) << tensor.name;
    for (size_t i = 0; i < want.steps.size(); ++i) {
      const sbp::BoxingStep& got = edge.plan->steps[i];
      EXPECT_EQ(got.kind, want.steps[i].kind) << tensor.name;
      EXPECT_EQ(got.from, want.steps[i].from) << tensor.name;
      EXPECT_EQ(got.to, want.steps[i].to) << tensor.name;
      EXPECT_EQ(got.groups, want.steps[i].groups) << tensor.name;
      EXPECT_EQ(got.transfers.size(), want.steps[i].transfers.size()) << tensor.name;
    }
  }
  EXPECT_GT(shifted, 10);
}

}  // namespace
}  // namespace twinflow::compiler
