// Lifetime-based memory plans and the 1F1B order, on compiled training Plans: shared bytes
// are never overwritten while a reader still needs them, whatever order messages arrive in;
// sharing really saves memory; and 1F1B keeps at most (stages - stage) micro-batches between
// their forward and their backward on every stage, where GPipe lets them all in.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/compiler/compile.h"
#include "engine/compiler/task_chains.h"
#include "engine/ops/builtin_ops.h"
#include "engine/runtime/test_executor.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "simulator/sim_executor.h"
#include "tests/support/tiny_gpt.h"

namespace twinflow {
namespace {

const graph::OpRegistry& Ops() {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  return registry;
}

plan::Plan CompileGpt(const std::string& strategy) {
  const models::GptConfig config = testing::TinyGptConfig();
  models::BuildOptions options;
  options.strategy = models::ParseStrategy(strategy);
  options.devices = 4;
  options.optimizer = graph::ParseOptimizer("adam:lr=0.01");
  const models::BuiltModel model = models::BuildGpt(Ops(), config, options);
  compiler::CompileOptions compile;
  compile.lower.fetches = {model.loss};
  compile.lower.micro_batches = model.strategy.micro_batches;
  compile.lower.one_f_one_b = model.strategy.schedule == models::Schedule::kOneFOneB;
  return compiler::Compile(model.graph, Ops(), sbp::AlphaBetaCostModel(), compile).plan;
}

int64_t UnsharedBytes(const plan::Plan& plan, int device) {
  int64_t bytes = 0;
  for (const plan::Regst& r : plan.regsts()) {
    if (plan.tasks(static_cast<int>(r.producer())).device() != device) continue;
    bytes += r.slots() * ((r.bytes_per_slot() + 63) / 64 * 64);
  }
  return bytes;
}

const char* const kStrategies[] = {"dp=2,tp=2", "tp=4", "dp=2,pp=2,mb=4,schedule=gpipe",
                                   "dp=2,pp=2,mb=4,schedule=1f1b", "tp=2,pp=2,mb=4,schedule=1f1b"};

TEST(MemoryPlan, SharedBytesAreNeverOverwrittenUnderRandomDelivery) {
  for (const char* strategy : kStrategies) {
    const plan::Plan plan = CompileGpt(strategy);
    for (uint64_t seed = 0; seed < 10; ++seed) {
      const runtime::TestRunResult r = runtime::RunWithRandomDelivery(plan, 2, seed);
      ASSERT_TRUE(r.finished) << strategy << " seed " << seed << "\n" << r.report;
      ASSERT_TRUE(r.violations.empty()) << strategy << " seed " << seed << ": " << r.violations[0];
    }
  }
}

TEST(MemoryPlan, SharingShrinksEveryArenaAndThePeakFitsIt) {
  for (const char* strategy : kStrategies) {
    const plan::Plan plan = CompileGpt(strategy);
    for (const plan::MemoryPlan& m : plan.memory()) {
      const int64_t unshared = UnsharedBytes(plan, m.device());
      EXPECT_LT(m.arena_bytes(), unshared) << strategy << " device " << m.device();
      EXPECT_LE(m.peak_bytes(), m.arena_bytes()) << strategy << " device " << m.device();
      RecordProperty(std::string(strategy) + " device " + std::to_string(m.device()),
                     std::to_string(m.arena_bytes()) + " of " + std::to_string(unshared));
    }
  }
}

// The simulator counts live slots as the runtime's arena does; on compiled Plans its live peak
// stays within the memory plan's peak on every device.
TEST(MemoryPlan, SimulatedLiveBytesStayWithinThePlannedPeak) {
  const sim::Topology cluster(sim::Preset("cpu-local", 2));
  for (const char* strategy : kStrategies) {
    const plan::Plan plan = CompileGpt(strategy);
    sim::SimOptions options;
    options.steps = 2;
    const sim::SimResult r = sim::Simulate(plan, cluster, options);
    ASSERT_TRUE(r.finished) << strategy << "\n" << r.deadlock_report;
    for (const sim::DeviceReport& d : r.devices) {
      EXPECT_GT(d.live_peak_bytes, 0) << strategy << " " << d.name;
      EXPECT_LE(d.live_peak_bytes, d.peak_bytes) << strategy << " " << d.name;
    }
  }
}

// Per device: the most micro-batches whose forward chain has started while their backward
// chain has not yet finished, over a run with random delivery.
std::map<int32_t, int64_t> MostInFlight(const plan::Plan& plan, uint64_t seed) {
  std::map<int32_t, int64_t> first_forward;  // device -> its forward chain's first task
  std::map<int32_t, int64_t> last_backward;
  for (const compiler::TaskChain& chain : compiler::FindTaskChains(plan)) {
    if (chain.acts_per_step != plan.pieces_per_step()) continue;
    if (chain.forward) first_forward[chain.device] = chain.tasks.front();
    else last_backward[chain.device] = chain.tasks.back();
  }
  const runtime::TestRunResult r = runtime::RunWithRandomDelivery(plan, 2, seed);
  EXPECT_TRUE(r.finished) << r.report;
  std::map<int32_t, std::set<int64_t>> open;  // device -> pieces started and not finished
  std::map<int32_t, int64_t> most;
  for (const runtime::Launch& launch : r.launches) {
    const int32_t device = plan.tasks(static_cast<int>(launch.task)).device();
    // A backward chain's last act ends a micro-batch's stay: acts of one task never overlap,
    // so by the time the next forward may start (which it must wait for) it has finished.
    if (last_backward.count(device) && launch.task == last_backward[device]) {
      open[device].erase(launch.piece);
    }
    if (first_forward.count(device) && launch.task == first_forward[device]) {
      open[device].insert(launch.piece);
      most[device] = std::max<int64_t>(most[device], static_cast<int64_t>(open[device].size()));
    }
  }
  return most;
}

TEST(PipelineOrder, OneFOneBKeepsAtMostStagesMinusStageMicroBatchesInFlight) {
  const plan::Plan one_f_one_b = CompileGpt("dp=2,pp=2,mb=4,schedule=1f1b");
  const plan::Plan gpipe = CompileGpt("dp=2,pp=2,mb=4,schedule=gpipe");
  int64_t gpipe_most = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    for (const auto& [device, most] : MostInFlight(one_f_one_b, seed)) {
      const int stage = one_f_one_b.devices(device).index() < 2 ? 0 : 1;  // stage 0: cpu:0-1
      EXPECT_LE(most, 2 - stage) << "device " << device << " seed " << seed;
    }
    for (const auto& [device, most] : MostInFlight(gpipe, seed)) {
      gpipe_most = std::max(gpipe_most, most);
    }
  }
  EXPECT_GT(gpipe_most, 2) << "GPipe lets more micro-batches in, so the bound is 1F1B's doing";
}

}  // namespace
}  // namespace twinflow
