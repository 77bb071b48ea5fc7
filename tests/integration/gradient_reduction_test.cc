// How a data-parallel gradient is reduced, on compiled training Plans of the tiny GPT: its
// all-reduce floats beside the backward pass and sums in place (overlap), and small gradients
// share one all-reduce per bucket of their group (compiler.md, "Gradient buckets").
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/compiler/task_chains.h"
#include "engine/plan/memory_overlaps.h"
#include "engine/runtime/test_executor.h"
#include "simulator/sim_executor.h"
#include "tests/support/training_plan.h"

namespace twinflow {
namespace {

plan::Plan CompileGpt(const std::string& strategy) {
  return testing::CompileTraining(testing::BuildTrainingGpt(strategy));
}

// overlap=on (the default) lets each gradient's all-reduce float beside the backward pass,
// summed in place; overlap=off keeps every collective in its device's order. Floating shortens
// the simulated step (the data-parallel reduction hides behind the rest of the backward pass),
// and the in-place sum keeps its memory near the serial order's: a floating all-reduce holds
// one buffer from its gradient's producer to the update, where the serial one held the
// gradient until it ran and its result from there. (The losses are the serial order's, bit for
// bit: MlpTraining's dp=2,tp=2 with and without overlap.)
// Each gradient its own all-reduce here (bucket=0): the tiny GPT's gradients fit one bucket,
// which has nothing left to overlap once its last gradient is made.
TEST(Overlap, GradientAllReducesFloatInPlaceAndShortenTheStep) {
  const plan::Plan on = CompileGpt("dp=4,bucket=0");
  const plan::Plan off = CompileGpt("dp=4,overlap=off,bucket=0");
  int64_t floating = 0;
  for (const compiler::TaskChain& chain : compiler::FindTaskChains(on)) {
    for (const compiler::FloatingTask& f : chain.floating) {
      const plan::Task& t = on.tasks(static_cast<int>(f.task));
      ASSERT_EQ(t.kind(), plan::COLLECTIVE) << t.name();
      EXPECT_LT(f.after, f.before) << t.name();
      floating += t.collective().in_place() ? 1 : 0;
    }
  }
  EXPECT_GT(floating, 0);
  for (const compiler::TaskChain& chain : compiler::FindTaskChains(off)) {
    EXPECT_TRUE(chain.floating.empty());
  }
  const sim::Topology cluster(sim::Preset("dgx-a100", 1));
  sim::SimOptions options;
  options.steps = 2;
  const sim::SimResult a = sim::Simulate(on, cluster, options);
  const sim::SimResult b = sim::Simulate(off, cluster, options);
  ASSERT_TRUE(a.finished && b.finished);
  RecordProperty("step", std::to_string(a.step_s) + " s overlapped, " + std::to_string(b.step_s) +
                             " s in order");
  EXPECT_LT(a.step_s, b.step_s);
  for (int d = 0; d < on.devices_size(); ++d) {
    RecordProperty("device " + std::to_string(d),
                   std::to_string(on.memory(d).peak_bytes()) + " overlapped, " +
                       std::to_string(off.memory(d).peak_bytes()) + " in order");
    EXPECT_LE(a.devices[d].live_peak_bytes, on.memory(d).peak_bytes());
    EXPECT_LE(static_cast<double>(on.memory(d).peak_bytes()),
              1.05 * static_cast<double>(off.memory(d).peak_bytes()));
  }
}

// The distinct collectives of `kind` (one per group and issue order, whatever its members).
std::set<std::pair<int64_t, int64_t>> Collectives(const plan::Plan& plan,
                                                  plan::CollectiveKind kind) {
  std::set<std::pair<int64_t, int64_t>> found;
  for (const plan::Task& t : plan.tasks()) {
    if (t.kind() == plan::COLLECTIVE && t.collective().kind() == kind)
      found.insert({t.collective().group(), t.issue_order()});
  }
  return found;
}

// Gradient buckets (LowerOptions::bucket_bytes): the data-parallel all-reduces of small
// gradients join into one collective per bucket of their group, each input a gradient of the
// backward pass, each bucket under the cap before its last gradient joined, a gradient of the
// cap or more on its own; the Plan validates (compile does), runs under random message orders
// with its shared bytes never overwritten, and its simulated step fits its planned peak.
TEST(GradientBuckets, SmallGradientsShareAnAllReduceOfTheirGroup) {
  const models::BuiltModel model = testing::BuildTrainingGpt("dp=4");
  compiler::CompileOptions compile = testing::TrainingCompileOptions(model);
  compile.lower.bucket_bytes = 4096;
  const plan::Plan bucketed = testing::CompileTraining(model, compile);
  const plan::Plan whole = CompileGpt("dp=4");  // the default 25 MiB: one bucket per group
  const plan::Plan unbucketed = CompileGpt("dp=4,bucket=0");
  const size_t each = Collectives(unbucketed, plan::ALL_REDUCE).size();
  const size_t some = Collectives(bucketed, plan::ALL_REDUCE).size();
  const size_t one = Collectives(whole, plan::ALL_REDUCE).size();
  RecordProperty("all-reduces", std::to_string(each) + " unbucketed, " + std::to_string(some) +
                                    " in 4 KiB buckets, " + std::to_string(one) + " in 25 MiB");
  EXPECT_LT(some, each);
  EXPECT_LT(one, some);
  int64_t buckets = 0;
  for (const plan::Task& t : bucketed.tasks()) {
    if (t.kind() != plan::COLLECTIVE) continue;
    const std::vector<std::pair<int64_t, int64_t>> pairs = plan::DataPairs(bucketed, t);
    ASSERT_FALSE(pairs.empty()) << t.name();
    if (pairs.size() == 1) continue;
    ++buckets;
    EXPECT_EQ(t.collective().kind(), plan::ALL_REDUCE) << t.name();
    EXPECT_EQ(t.pass(), plan::PASS_OPTIMIZER) << t.name();
    int64_t bytes = 0;
    for (const auto& [in, out] : pairs) {
      const plan::Regst& input = bucketed.regsts(static_cast<int>(in));
      EXPECT_LT(input.bytes_per_slot(), 4096) << t.name();
      EXPECT_EQ(input.tensor().SerializeAsString(),
                bucketed.regsts(static_cast<int>(out)).tensor().SerializeAsString());
      const plan::Pass made = bucketed.tasks(static_cast<int>(input.producer())).pass();
      EXPECT_TRUE(made == plan::PASS_BACKWARD || made == plan::PASS_WEIGHT) << t.name();
      bytes += input.bytes_per_slot();
    }
    const int64_t last = bucketed.regsts(static_cast<int>(pairs.back().first)).bytes_per_slot();
    EXPECT_LT(bytes - last, 4096) << t.name() << " was full before its last gradient joined";
    EXPECT_TRUE(t.collective().in_place()) << t.name();
  }
  EXPECT_GT(buckets, 0);
  for (uint64_t seed = 0; seed < 5; ++seed) {
    const runtime::TestRunResult r = runtime::RunWithRandomDelivery(bucketed, 2, seed);
    ASSERT_TRUE(r.finished) << "seed " << seed << "\n" << r.report;
    ASSERT_TRUE(r.violations.empty()) << "seed " << seed << ": " << r.violations[0];
  }
  const sim::Topology cluster(sim::Preset("dgx-a100", 1));
  sim::SimOptions options;
  options.steps = 2;
  const sim::SimResult result = sim::Simulate(bucketed, cluster, options);
  ASSERT_TRUE(result.finished);
  for (int d = 0; d < bucketed.devices_size(); ++d)
    EXPECT_LE(result.devices[d].live_peak_bytes, bucketed.memory(d).peak_bytes());
}

}  // namespace
}  // namespace twinflow
