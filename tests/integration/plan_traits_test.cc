// The task traits of compiled training Plans (plan.proto Task fields recomputes,
// optimizer_update, stage, pass): set by the compiler from the graph and the op roles, never
// from names, and what an executor may rely on. The tests map tasks back to their ops by name
// only to know what to expect.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "engine/compiler/compile.h"
#include "engine/ops/builtin_ops.h"
#include "engine/plan/plan_validate.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
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
  options.strategy = models::ParseStrategy(strategy);
  options.devices = 4;
  options.optimizer = graph::ParseOptimizer(optimizer);
  CompiledGpt out{models::BuildGpt(Ops(), testing::TinyGptConfig(), options), {}};
  compiler::CompileOptions compile;
  compile.lower.fetches = {out.model.loss};
  compile.lower.micro_batches = out.model.strategy.micro_batches;
  compile.lower.one_f_one_b = out.model.strategy.schedule == models::Schedule::kOneFOneB;
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

// On pp=2 every task's stage is the stage whose placement its op has (for an op's own tasks),
// and every task on a device has that device's stage.
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
    EXPECT_EQ(task.stage(), want) << task.name();
  }
  EXPECT_EQ(stages, (std::set<int32_t>{0, 1}));
}

}  // namespace
}  // namespace twinflow
