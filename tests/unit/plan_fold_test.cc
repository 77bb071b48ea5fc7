// Folded Plans (engine/plan/plan_fold.h): only copy 0 of a data-parallel symmetry is lowered,
// and the simulator stands it in for every copy. A folded Plan holds exactly 1/copies of the
// tasks and registers, plans the same memory per device, and simulates to the same step time
// and per-device figures as the Plan of every device; what breaks the symmetry is lowered
// whole, and only the simulator runs a folded Plan.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <string>

#include "engine/compiler/compile.h"
#include "engine/plan/plan_validate.h"
#include "engine/runtime/threaded_executor.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "kernels/builtin_kernels.h"
#include "planner/folds.h"
#include "planner/lower_options.h"
#include "simulator/hardware/cluster.h"
#include "simulator/hardware/search_cost.h"
#include "simulator/sim_executor.h"
#include "tests/unit/model_test_helpers.h"

namespace twinflow::models {
namespace {

using namespace twinflow::parallel;  // the strategy
using namespace twinflow::planner;   // what the planner computes of it

using parallel::ParseStrategy;
using planner::DataParallelFold;
using planner::ReplicaFold;
using planner::StrategyLowerOptions;

using model_test_helpers::Options;
using model_test_helpers::Registry;

// DGX A100 figures on `nodes` nodes of `per_node` GPUs: small nodes give small models copies.
sim::ClusterSpec SmallNodes(int nodes, int per_node) {
  sim::ClusterSpec spec = sim::Preset("dgx-a100", nodes);
  spec.set_devices_per_node(per_node);
  return spec;
}

BuiltModel Gpt(const std::string& strategy, int64_t devices, int64_t layers = 2,
               int64_t batch = 16) {
  BuildOptions options = Options(strategy, devices);
  options.device = DeviceType::kCuda;
  // Megatron-sized: the tiny GPTs replicate some weights over tp, and their gradients' boxings
  // then copy between the copies.
  return BuildGpt(Registry(), model_test_helpers::MegatronSizedGpt(layers, batch), options);
}

compiler::Compiled CompileOn(const BuiltModel& model, const sim::ClusterSpec& spec,
                             plan::DeviceFold fold) {
  const sbp::AlphaBetaCostModel cost(sim::SearchCostConfig(spec));
  compiler::CompileOptions options;
  options.lower = StrategyLowerOptions(model.strategy);
  options.lower.fetches = {model.loss};
  options.lower.fold = fold;
  return compiler::Compile(model.graph, Registry(), cost, options);
}

int64_t DataRegisters(const plan::Plan& plan) {
  int64_t n = 0;
  for (const plan::Regst& r : plan.regsts()) n += r.tensor().dtype() != plan::DTYPE_UNSPECIFIED;
  return n;
}

// Compiles `strategy` on `spec` folded and whole, checks the folded Plan is 1/copies of the
// whole one, and that both simulate alike, device by device.
void ExpectFoldedSimulatesAlike(const std::string& strategy, const sim::ClusterSpec& spec,
                                int copies, int64_t layers = 2) {
  SCOPED_TRACE(strategy);
  const BuiltModel model = Gpt(strategy, spec.nodes() * spec.devices_per_node(), layers);
  const plan::DeviceFold fold = DataParallelFold(model.strategy, spec.devices_per_node());
  ASSERT_EQ(fold.copies, copies);
  const compiler::Compiled folded = CompileOn(model, spec, fold);
  const compiler::Compiled whole = CompileOn(model, spec, {});
  ASSERT_EQ(folded.fold_refused, "");
  ASSERT_EQ(folded.plan.fold().copies(), copies);
  EXPECT_EQ(folded.plan.devices_size() * copies, whole.plan.devices_size());
  EXPECT_EQ(folded.plan.tasks_size() * copies, whole.plan.tasks_size());
  // Data registers alike; a COPY reading two copies' images of one register consumes (and, for
  // a variable's, reports to its ASSIGN through) the one copy-0 register once.
  EXPECT_EQ(DataRegisters(folded.plan) * copies, DataRegisters(whole.plan));

  const sim::Topology topology(spec);
  const sim::SimResult a = sim::Simulate(folded.plan, topology, sim::SimOptions{});
  const sim::SimResult b = sim::Simulate(whole.plan, topology, sim::SimOptions{});
  ASSERT_TRUE(a.finished) << a.deadlock_report;
  ASSERT_TRUE(b.finished) << b.deadlock_report;
  EXPECT_NEAR(a.step_s, b.step_s, 1e-9 * b.step_s);
  EXPECT_NEAR(a.flops_per_step, b.flops_per_step, 1e-9 * b.flops_per_step);
  EXPECT_NEAR(a.mfu, b.mfu, 1e-9);
  std::map<std::string, const sim::DeviceReport*> by_name;
  for (const sim::DeviceReport& d : b.devices) by_name[d.name] = &d;
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (const sim::DeviceReport& d : a.devices) {
    SCOPED_TRACE(d.name);
    ASSERT_TRUE(by_name.count(d.name));
    const sim::DeviceReport& e = *by_name[d.name];
    EXPECT_EQ(d.cluster_device, e.cluster_device);
    EXPECT_EQ(d.arena_bytes, e.arena_bytes);
    EXPECT_EQ(d.peak_bytes, e.peak_bytes);
    EXPECT_EQ(d.live_peak_bytes, e.live_peak_bytes);
    EXPECT_NEAR(d.busy_s, e.busy_s, 1e-9 * b.total_s);
    EXPECT_NEAR(d.exposed_comm_s, e.exposed_comm_s, 1e-9 * b.total_s);
    // Another copy's device reports copy 0's link bytes; a double binary tree between the
    // nodes loads them unequally, so only copy 0's are its own.
    if (!fold.Stored(d.cluster_device)) continue;
    EXPECT_NEAR(d.inter_bytes, e.inter_bytes, 1e-6 * (1 + e.inter_bytes));
    EXPECT_NEAR(d.intra_bytes, e.intra_bytes, 1e-6 * (1 + e.intra_bytes));
  }
}

// --replica's fold (ReplicaFold: every dp replica a copy, alike on the nodes or not) against
// the whole Plan: memory equal on every device, step within `tolerance`.
void ExpectReplicaNearTheWholePlan(const std::string& strategy, int64_t devices,
                                   const sim::ClusterSpec& spec, double tolerance) {
  SCOPED_TRACE(strategy);
  // A batch of 24 splits evenly over dp=3 and dp=8 (uneven splits fold as copy 0's shards).
  const BuiltModel model = Gpt(strategy, devices, 2, 24);
  const plan::DeviceFold fold = ReplicaFold(model.strategy);
  ASSERT_EQ(fold.copies, model.strategy.dp);
  const compiler::Compiled folded = CompileOn(model, spec, fold);
  const compiler::Compiled whole = CompileOn(model, spec, {});
  ASSERT_EQ(folded.fold_refused, "");
  EXPECT_FALSE(folded.plan.fold().uneven_shards());
  const sim::Topology topology(spec);
  const sim::SimResult a = sim::Simulate(folded.plan, topology, sim::SimOptions{});
  const sim::SimResult b = sim::Simulate(whole.plan, topology, sim::SimOptions{});
  ASSERT_TRUE(a.finished && b.finished);
  EXPECT_NEAR(a.step_s, b.step_s, tolerance * b.step_s);
  std::cout << strategy << ": replica " << a.step_s << " s, whole " << b.step_s << " s\n";
  // Memory: copy 0's devices are the whole Plan's, and so is the fullest device. (Another
  // replica's device may differ from its copy-0 device by the few KiB of a boxing whose sender
  // the whole Plan picks by position: send_recv_step.cc.)
  ASSERT_EQ(a.devices.size(), b.devices.size());
  int64_t fullest_a = 0, fullest_b = 0;
  for (size_t d = 0; d < a.devices.size(); ++d) {
    EXPECT_EQ(a.devices[d].name, b.devices[d].name);
    fullest_a = std::max(fullest_a, a.devices[d].arena_bytes);
    fullest_b = std::max(fullest_b, b.devices[d].arena_bytes);
    if (!fold.Stored(a.devices[d].cluster_device)) continue;
    EXPECT_EQ(a.devices[d].arena_bytes, b.devices[d].arena_bytes) << a.devices[d].name;
    EXPECT_EQ(a.devices[d].peak_bytes, b.devices[d].peak_bytes) << a.devices[d].name;
  }
  EXPECT_EQ(fullest_a, fullest_b);
}

TEST(PlanFold, ReplicaFoldsAnyDpNearTheWholePlan) {
  // Replicas alike on 8-GPU nodes, 4 to a node, where DataParallelFold folds by whole nodes.
  ExpectReplicaNearTheWholePlan("dp=8,tp=2", 16, SmallNodes(2, 8), 1e-9);
  // dp=3 on nodes of 4: DataParallelFold cannot fold (a stage's 6 devices straddle nodes);
  // every replica's pipeline hand-off still crosses nodes alike.
  ExpectReplicaNearTheWholePlan("dp=3,tp=2,pp=2,mb=4", 12, SmallNodes(3, 4), 0.02);
  // dp=3 on nodes of 8: replica 0 hands off inside node 0, replicas 1 and 2 across nodes;
  // the fold times them all as replica 0.
  ExpectReplicaNearTheWholePlan("dp=3,tp=2,pp=2,mb=4", 12, SmallNodes(2, 8), 0.02);
}

TEST(PlanFold, DataParallelCopiesStartANode) {
  EXPECT_EQ(DataParallelFold(ParseStrategy("dp=32,tp=4"), 8).copies, 16);
  EXPECT_EQ(DataParallelFold(ParseStrategy("dp=32,tp=4"), 8).stride, 8);
  EXPECT_EQ(DataParallelFold(ParseStrategy("dp=32,tp=4,pp=2"), 8).block, 128);
  EXPECT_EQ(DataParallelFold(ParseStrategy("dp=4,tp=8"), 8).copies, 4);
  EXPECT_EQ(DataParallelFold(ParseStrategy("dp=2,tp=2"), 8).copies, 1);   // one node
  EXPECT_EQ(DataParallelFold(ParseStrategy("dp=3,tp=8"), 16).copies, 1);  // 24 % 16
  EXPECT_EQ(DataParallelFold(ParseStrategy("auto"), 8).copies, 1);
}

TEST(PlanFold, DataParallelSimulatesAsTheWholePlan) {
  ExpectFoldedSimulatesAlike("dp=4,tp=2,mb=2", SmallNodes(4, 2), 4);
}

TEST(PlanFold, PipelinedZeroAndSequenceParallelSimulateAsTheWholePlan) {
  ExpectFoldedSimulatesAlike("dp=4,tp=2,pp=2,mb=4,zero=1,sp=true,precision=bf16", SmallNodes(8, 2),
                             4);
  ExpectFoldedSimulatesAlike("dp=4,tp=2,pp=2,vp=2,mb=4,recompute=full", SmallNodes(4, 4), 2,
                             /*layers=*/4);
}

TEST(PlanFold, ManyNodesOfDataParallelismSimulateAsTheWholePlan) {
  // 8 nodes: the gradient all-reduces run hierarchically or as trees between the nodes.
  ExpectFoldedSimulatesAlike("dp=16,tp=1,mb=1", SmallNodes(8, 2), 8);
}

// dp=3 splits the batch of 16 (6, 5, 5) and ZeRO's optimizer state (512 rows: 171, 171, 170)
// unevenly: the fold stands copy 0's longer shards in for every copy and says so, which bounds
// the whole Plan's step from above by under one part in the shards' lengths.
TEST(PlanFold, UnevenSplitsFoldAsCopyZerosShards) {
  const sim::ClusterSpec spec = SmallNodes(3, 2);
  const BuiltModel model = Gpt("dp=3,tp=2,zero=1", 6);
  const plan::DeviceFold fold = DataParallelFold(model.strategy, spec.devices_per_node());
  ASSERT_EQ(fold.copies, 3);
  const compiler::Compiled folded = CompileOn(model, spec, fold);
  const compiler::Compiled whole = CompileOn(model, spec, {});
  ASSERT_EQ(folded.fold_refused, "");
  EXPECT_TRUE(folded.plan.fold().uneven_shards());
  EXPECT_FALSE(whole.plan.fold().uneven_shards());
  const sim::Topology topology(spec);
  const sim::SimResult a = sim::Simulate(folded.plan, topology, sim::SimOptions{});
  const sim::SimResult b = sim::Simulate(whole.plan, topology, sim::SimOptions{});
  ASSERT_TRUE(a.finished && b.finished);
  EXPECT_GE(a.step_s, b.step_s * (1 - 1e-9));
  // Equal here (4.058 ms both): the whole Plan's step waits for its longest shards too.
  EXPECT_LE(a.step_s, b.step_s * 1.01);
}

TEST(PlanFold, AnAsymmetricPlacementIsLoweredWhole) {
  // The fold asks for copies of 4 devices in blocks of 8, but the model has only 4 devices.
  const BuiltModel model = Gpt("dp=2,tp=2", 4);
  const compiler::Compiled c = CompileOn(model, SmallNodes(2, 4), {2, 4, 8});
  EXPECT_NE(c.fold_refused.find("cannot fold: placement"), std::string::npos) << c.fold_refused;
  EXPECT_EQ(c.plan.fold().copies(), 0);
  EXPECT_EQ(c.plan.devices_size(), 4);
}

TEST(PlanFold, OnlyTheSimulatorRunsAFoldedPlan) {
  const BuiltModel model = Gpt("dp=4,tp=2", 8);
  const compiler::Compiled c = CompileOn(model, SmallNodes(4, 2), {4, 2, 8});
  ASSERT_EQ(c.plan.fold().copies(), 4);
  plan::ValidatePlan(c.plan);
  const kernels::KernelRegistry kernels = kernels::BuiltinKernels();
  try {
    runtime::ThreadedExecutor executor(c.plan, kernels);
    FAIL() << "a folded Plan was accepted for running";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("folded"), std::string::npos) << e.what();
  }
}

TEST(PlanFold, TheValidatorChecksTheFold) {
  const BuiltModel model = Gpt("dp=4,tp=2", 8);
  plan::Plan p = CompileOn(model, SmallNodes(4, 2), {4, 2, 8}).plan;
  plan::Plan bad_block = p;
  bad_block.mutable_fold()->set_block(6);
  EXPECT_THROW(plan::ValidatePlan(bad_block), PlanError);
  plan::Plan unfolded = p;
  unfolded.clear_fold();
  bool spans = false;
  for (const plan::CommGroup& g : unfolded.groups()) spans |= g.spans_copies();
  ASSERT_TRUE(spans);  // the gradients' all-reduces over dp
  EXPECT_THROW(plan::ValidatePlan(unfolded), PlanError);
}

}  // namespace
}  // namespace twinflow::models
