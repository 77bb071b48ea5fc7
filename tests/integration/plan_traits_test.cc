// The task traits of compiled training Plans (plan.proto Task fields recomputes,
// optimizer_update, stage, pass): set by the compiler from the graph and the op roles, never
// from names, and what an executor may rely on. The tests map tasks back to their ops by name
// only to know what to expect.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "engine/compiler/compile.h"
#include "engine/core/error.h"
#include "engine/graph/autograd.h"
#include "engine/graph/graph_builder.h"
#include "engine/graph/optimizer.h"
#include "engine/ops/builtin_ops.h"
#include "engine/plan/plan_validate.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "planner/lower_options.h"
#include "tests/support/tiny_gpt.h"

namespace twinflow {
namespace {

const graph::OpRegistry& Ops() {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  return registry;
}

struct CompiledGpt {
  models::BuiltModel model;
  plan::Plan plan;
};

CompiledGpt CompileGpt(const std::string& strategy, const std::string& optimizer = "adam:lr=0.01") {
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy(strategy);
  options.devices = 4;
  options.optimizer = graph::ParseOptimizer(optimizer);
  CompiledGpt out{models::BuildGpt(Ops(), testing::TinyGptConfig(), options), {}};
  compiler::CompileOptions compile;
  compile.lower = planner::StrategyLowerOptions(out.model.strategy);
  compile.lower.fetches = {out.model.loss};
  out.plan = compiler::Compile(out.model.graph, Ops(), sbp::AlphaBetaCostModel(), compile).plan;
  plan::ValidatePlan(out.plan);
  return out;
}

// The op a task lowers: its name is "<op name>@<device index>".
const graph::OpNode* OpOf(const models::BuiltModel& model, const plan::Task& task) {
  const std::string& name = task.name();
  const auto at = name.rfind('@');
  if (at == std::string::npos) return nullptr;
  const auto id = model.graph.FindOp(name.substr(0, at));
  return id ? &model.graph.op(*id) : nullptr;
}

TEST(PlanTraits, OptimizerUpdatesCarryTheTraitAndTheOptimizerPass) {
  for (const std::string optimizer : {"sgd:lr=0.1", "sgd:lr=0.1,momentum=0.9", "adam:lr=0.01"}) {
    const CompiledGpt c = CompileGpt("dp=2,tp=2", optimizer);
    int updates = 0;
    for (const plan::Task& task : c.plan.tasks()) {
      if (task.kind() != plan::COMPUTE) continue;
      const graph::OpNode* op = OpOf(c.model, task);
      ASSERT_NE(op, nullptr) << task.name();
      const graph::OpRole role = Ops().Find(op->type).role;
      EXPECT_EQ(task.optimizer_update(), role == graph::OpRole::kOptimizerUpdate) << task.name();
      if (task.optimizer_update()) {
        ++updates;
        EXPECT_EQ(task.pass(), plan::PASS_OPTIMIZER) << task.name();
      }
    }
    // One update per parameter and device that holds a part of it.
    int expected = 0;
    for (const graph::OpNode& op : c.model.graph.ops()) {
      if (Ops().Find(op.type).role == graph::OpRole::kOptimizerUpdate) {
        expected += static_cast<int>(op.placement.size());
      }
    }
    EXPECT_GT(updates, 0) << optimizer;
    EXPECT_EQ(updates, expected) << optimizer;
  }
}

TEST(PlanTraits, PassesFollowTheGraph) {
  const CompiledGpt c = CompileGpt("dp=2,tp=2");
  std::set<plan::Pass> seen;
  for (const plan::Task& task : c.plan.tasks()) {
    seen.insert(task.pass());
    const graph::OpNode* op = OpOf(c.model, task);
    if (op == nullptr || task.kind() != plan::COMPUTE) continue;
    const plan::Pass want = graph::UpdatesState(Ops().Find(op->type).role) ? plan::PASS_OPTIMIZER
                            : c.model.graph.IsBackward(op->id)             ? plan::PASS_BACKWARD
                                                                           : plan::PASS_FORWARD;
    EXPECT_EQ(task.pass(), want) << task.name();
  }
  EXPECT_EQ(seen,
            (std::set<plan::Pass>{plan::PASS_FORWARD, plan::PASS_BACKWARD, plan::PASS_OPTIMIZER}));
}

// recompute.cc flags the ops it re-emits; exactly their tasks carry the trait, whatever they
// are called.
TEST(PlanTraits, RecomputedTasksAreFlaggedFromTheGraph) {
  const CompiledGpt plain = CompileGpt("dp=2,pp=2,mb=4,schedule=1f1b");
  for (const plan::Task& task : plain.plan.tasks()) EXPECT_FALSE(task.recomputes()) << task.name();

  const CompiledGpt c = CompileGpt("dp=2,pp=2,mb=4,schedule=1f1b,recompute=full");
  int64_t expected = 0;
  for (const graph::OpNode& op : c.model.graph.ops()) {
    if (op.recomputed) expected += op.placement.size();
  }
  int64_t flagged = 0;
  for (const plan::Task& task : c.plan.tasks()) {
    if (!task.recomputes()) continue;
    ++flagged;
    EXPECT_EQ(task.kind(), plan::COMPUTE) << task.name();
    const graph::OpNode* op = OpOf(c.model, task);
    ASSERT_NE(op, nullptr) << task.name();
    EXPECT_TRUE(op->recomputed) << task.name();
    EXPECT_EQ(task.pass(), plan::PASS_BACKWARD) << task.name();
  }
  EXPECT_GT(expected, 0);
  EXPECT_EQ(flagged, expected);
}

// On pp=2 every task's stage is its op's stage field (which the model builder set to the stage
// whose placement the op has), and every task on a device has that device's stage.
TEST(PlanTraits, StageIsTheStageOfThePlacement) {
  const CompiledGpt c = CompileGpt("dp=2,pp=2,mb=4,schedule=1f1b");
  std::map<int32_t, int32_t> device_stage;
  std::set<int32_t> stages;
  for (const plan::Task& task : c.plan.tasks()) {
    stages.insert(task.stage());
    const auto [it, fresh] = device_stage.emplace(task.device(), task.stage());
    EXPECT_EQ(it->second, task.stage()) << task.name() << ": another stage on its device";
    const graph::OpNode* op = OpOf(c.model, task);
    if (op == nullptr) continue;
    int32_t want = -1;
    for (int32_t s = 0; s < 2; ++s) {
      if (op->placement == c.model.strategy.StagePlacement(s, 4)) want = s;
    }
    ASSERT_GE(want, 0) << op->name << " on " << op->placement.ToString();
    EXPECT_EQ(op->stage, want) << op->name;
    EXPECT_EQ(task.stage(), want) << task.name();
  }
  EXPECT_EQ(stages, (std::set<int32_t>{0, 1}));
}

// A graph built by hand: two layers with their gradients and updates on two stages. The stages
// are the ops' fields, not guessed from placements: an op moved to another placement within
// stage 0 (a to_global) stays in stage 0, and a gap in the numbering is refused.
graph::LogicalGraph TwoStageGraph(int32_t second_stage, bool move_within_stage_0) {
  graph::GraphBuilder b(Ops(), sbp::ParsePlacement("cpu:0"));
  const graph::TensorId x = b.Input("x", Shape{4, 8});
  const Attrs init{{"init", std::string("normal")}, {"std", 0.5}, {"seed", int64_t{1}}};
  const graph::TensorId w0 = b.Variable("w0", Shape{8, 8}, DType::kF32, init);
  graph::TensorId h = b.Add1("matmul", {x, w0}, {}, "layer0");
  if (move_within_stage_0) {
    b.SetPlacement(sbp::ParsePlacement("cpu:1"));
    h = b.Add1("relu", {h}, {}, "moved");
  }
  b.SetStage(second_stage, sbp::ParsePlacement("cpu:2"));
  const graph::TensorId w1 = b.Variable("w1", Shape{8, 8}, DType::kF32, init);
  const graph::TensorId y = b.Add1("matmul", {h, w1}, {}, "layer1");
  const graph::TensorId loss = b.Add1("reduce_sum", {y}, {}, "loss");
  const auto grads = graph::AddBackward(b, loss, {w0, w1});
  graph::AddOptimizer(b, graph::ParseOptimizer("sgd:lr=0.1"), grads);
  return b.graph();
}

plan::Plan CompileGraph(const graph::LogicalGraph& graph, int64_t micro_batches) {
  compiler::CompileOptions compile;
  compile.lower.micro_batches = micro_batches;
  return compiler::Compile(graph, Ops(), sbp::AlphaBetaCostModel(), compile).plan;
}

TEST(PlanTraits, StagesAreTheOpsFieldsNotTheirPlacements) {
  const graph::LogicalGraph graph = TwoStageGraph(1, true);
  for (const graph::OpNode& op : graph.ops()) {
    // Gradients and updates join their op's stage (GraphBuilder::PlaceLike).
    const bool second = op.placement == sbp::ParsePlacement("cpu:2");
    EXPECT_EQ(op.stage, second ? 1 : 0) << op.name << " on " << op.placement.ToString();
  }
  const plan::Plan plan = CompileGraph(graph, 2);
  std::map<int64_t, int32_t> stage_of_device;  // by device index (cpu:N)
  for (const plan::Task& task : plan.tasks()) {
    stage_of_device[plan.devices(task.device()).index()] = task.stage();
  }
  // Three placements, two stages: cpu:1 is in stage 0 with cpu:0.
  EXPECT_EQ(stage_of_device, (std::map<int64_t, int32_t>{{0, 0}, {1, 0}, {2, 1}}));
}

TEST(PlanTraits, AGapInTheStagesIsRefused) {
  try {
    CompileGraph(TwoStageGraph(2, false), 2);
    FAIL() << "a Plan with stages 0 and 2 compiled";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline stage 1 has no op"), std::string::npos)
        << e.what();
  }
}

TEST(PlanTraits, ANegativeStageIsRefused) {
  graph::GraphBuilder b(Ops(), sbp::ParsePlacement("cpu:0"));
  b.SetStage(-1, sbp::ParsePlacement("cpu:0"));
  EXPECT_THROW(b.Input("x", Shape{4, 8}), InvalidArgumentError);
}

// Boxing is planned once, by the search: the lowering lowers the search's plans and refuses an
// assignment that lacks one.
TEST(PlanTraits, LoweringUsesTheSearchsBoxingAndRefusesAMissingOne) {
  const CompiledGpt c = CompileGpt("dp=2,tp=2");
  compiler::SbpAssignment assignment =
      compiler::SearchSbp(c.model.graph, Ops(), sbp::AlphaBetaCostModel());
  ASSERT_FALSE(assignment.boxings.empty());
  compiler::LowerOptions lower;
  lower.fetches = {c.model.loss};
  const plan::Plan again = compiler::LowerToPlan(c.model.graph, Ops(), assignment, lower);
  EXPECT_EQ(again.content_hash(), c.plan.content_hash());
  const std::string missing = c.model.graph.tensor(assignment.boxings.front().tensor).name;
  assignment.boxings.erase(assignment.boxings.begin());
  try {
    compiler::LowerToPlan(c.model.graph, Ops(), assignment, lower);
    FAIL() << "lowered without the boxing of " << missing;
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("plans no boxing of '" + missing + "'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace twinflow
