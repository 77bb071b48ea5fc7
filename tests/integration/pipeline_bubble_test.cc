// The pipeline schedules' bubbles in the simulator, against the formulas (Narayanan et al.
// 2021, section 2.2): with p ranks, m micro-batches and v chunks per rank, the bubble is
// (p - 1) / (v m) of the ideal step, so a device is idle x / (1 + x) of the step. A GPT of 16
// equal layers (hidden 4096, so the stage-to-stage transfers are small beside the layers, and
// SGD, whose update is small beside the step) on 4 A100s of a DGX node, pp=4 and 8
// micro-batches, under 1F1B (v = 1), interleaved (v = 2, 4) and ZB-H1. Nothing is tuned to the
// formula: the simulator runs the Plan's actors, with the transfers between stages, the
// embedding and the loss on the end stages and each device's update where its pipeline lets
// it, which is why the figures differ a little (docs/compiler.md, The pipeline schedules).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/compiler/compile.h"
#include "engine/ops/builtin_ops.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "planner/lower_options.h"
#include "simulator/hardware/cluster.h"
#include "simulator/sim_executor.h"

namespace twinflow {
namespace {

sim::SimResult SimulatePipeline(const std::string& schedule) {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  models::GptConfig config;
  config.layers = 16;
  config.hidden = 4096;
  config.heads = 32;
  config.sequence = 1024;
  config.vocab = 1024;
  config.batch = 8;
  config.attention = ops::AttentionKind::kFused;
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy("pp=4,mb=8," + schedule);
  options.devices = 4;
  options.device = DeviceType::kCuda;
  options.optimizer = graph::ParseOptimizer("sgd:lr=0.1");
  const models::BuiltModel model = models::BuildGpt(registry, config, options);
  compiler::CompileOptions compile;
  compile.lower = planner::StrategyLowerOptions(model.strategy);
  compile.lower.fetches = {model.loss};
  const plan::Plan plan =
      compiler::Compile(model.graph, registry, sbp::AlphaBetaCostModel(), compile).plan;
  return sim::Simulate(plan, sim::Topology(sim::Preset("dgx-a100", 1)), sim::SimOptions{});
}

void ExpectTheBubble(const std::string& schedule, double formula, double& previous) {
  const sim::SimResult r = SimulatePipeline(schedule);
  ASSERT_TRUE(r.finished) << r.deadlock_report;
  double mean = 0;
  for (const sim::DeviceReport& d : r.devices) {
    const double bubble = d.bubble_s / r.step_s;
    ::testing::Test::RecordProperty(
        schedule + " " + d.name,
        std::to_string(bubble) + " of the step idle, formula " + std::to_string(formula));
    EXPECT_NEAR(bubble, formula, 0.02) << schedule << " " << d.name;
    mean += bubble / static_cast<double>(r.devices.size());
  }
  EXPECT_NEAR(mean, formula, 0.015) << schedule;
  EXPECT_LT(mean, previous) << schedule << ": a smaller bubble than the schedule before";
  previous = mean;
}

TEST(PipelineBubble, SimulatedBubblesFollowTheFormulas) {
  double previous = 1;
  for (const int64_t vp : {1, 2, 4}) {
    const double x = 3.0 / (static_cast<double>(vp) * 8);
    ExpectTheBubble("vp=" + std::to_string(vp), x / (1 + x), previous);
  }
  // ZB-H1: a bubble of (p - 1)(f + b - w) against m (f + b + w), with the forward, input- and
  // weight-gradient times f, b and w about equal in a transformer (each matmul's forward, its
  // input gradient and its weight gradient are the same flops).
  previous = 1;
  for (const char* schedule : {"schedule=1f1b", "schedule=zb-h1"}) {
    const double x = std::string(schedule) == "schedule=1f1b" ? 3.0 / 8 : 3.0 / (3 * 8);
    ExpectTheBubble(schedule, x / (1 + x), previous);
  }
}

// A zero-bubble schedule runs each device's weight pass after its input pass: no input-pass
// task may wait for a weight-pass task's data. A boxing both read once joined the pass of the
// op lowered first, and GPT-3's width in bf16 with a micro-batch split unevenly over dp=2 (3
// samples) boxes an activation gradient that a weight gradient and an input gradient both
// read: its Plan deadlocked in simulation (tune printed "deadlocks").
TEST(PipelineBubble, ZeroBubbleInputPassNeverWaitsOnTheWeightPass) {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  models::GptConfig config = models::GptConfig::Gpt3_175B();
  config.layers = 2;
  config.batch = 6;
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy("dp=2,pp=2,mb=2,schedule=zb-h1,precision=bf16");
  options.devices = 4;
  options.device = DeviceType::kCuda;
  const models::BuiltModel model = models::BuildGpt(registry, config, options);
  compiler::CompileOptions compile;
  compile.lower = planner::StrategyLowerOptions(model.strategy);
  compile.lower.fetches = {model.loss};
  const sim::Topology cluster(sim::Preset("dgx-h100", 1));
  const plan::Plan plan =
      compiler::Compile(model.graph, registry, sbp::AlphaBetaCostModel(), compile).plan;
  int64_t weight_reads = 0;
  for (const plan::Regst& r : plan.regsts()) {
    const plan::Task& producer = plan.tasks(static_cast<int>(r.producer()));
    if (producer.pass() != plan::PASS_WEIGHT || r.bytes_per_slot() == 0) continue;
    for (const int64_t c : r.consumers()) {
      const plan::Task& consumer = plan.tasks(static_cast<int>(c));
      ++weight_reads;
      EXPECT_NE(consumer.pass(), plan::PASS_BACKWARD)
          << producer.name() << " -> " << consumer.name();
    }
  }
  EXPECT_GT(weight_reads, 0);  // the weight pass has tasks, and their readers were checked
  const sim::SimResult r = sim::Simulate(plan, cluster, sim::SimOptions{});
  EXPECT_TRUE(r.finished) << r.deadlock_report.substr(0, 2000);
}

}  // namespace
}  // namespace twinflow
