// The ThreadedExecutor's asynchronous-device protocol, checked on the CPU: the same Plans run
// on HostDevices and on DeferredHostDevices (tests/support/deferred_device.h: every operation
// queued and run only as fences are polled, as on a GPU) must give the same losses bit for bit,
// so no act completes, no slot is reused and no collective reports done before the queued work
// behind it has run. Covers data, tensor and pipeline parallelism (both schedules), recompute,
// the fused attention, lagged registers and feeds/fetches through uploads and downloads.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "engine/compiler/compile.h"
#include "engine/ops/builtin_ops.h"
#include "engine/runtime/threaded_executor.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "kernels/cpu/cpu_kernels.h"
#include "models/model.h"
#include "planner/lower_options.h"
#include "tests/support/deferred_device.h"
#include "tests/support/step_losses.h"
#include "tests/support/tiny_gpt.h"

namespace twinflow {
namespace {

struct Outcome {
  std::vector<double> losses;
  runtime::RunResult result;
};

Outcome Train(const models::BuiltModel& model, const runtime::DeviceFactory& make_device) {
  static const graph::OpRegistry ops = ops::BuiltinOps();
  static const kernels::KernelRegistry kernels = kernels::CpuKernels();
  compiler::CompileOptions options;
  options.lower = planner::StrategyLowerOptions(model.strategy);
  options.lower.fetches = {model.loss};
  const plan::Plan plan =
      compiler::Compile(model.graph, ops, sbp::AlphaBetaCostModel(), options).plan;
  runtime::ThreadedExecutor executor(plan, kernels, nullptr, make_device);
  runtime::RunOptions run;
  run.steps = 4;
  run.watchdog_seconds = 60;
  Outcome outcome;
  outcome.result =
      executor.Run([&](int64_t step) { return models::SyntheticBatch(model, step, 7); }, run);
  outcome.losses = testing::StepLosses(model, outcome.result);
  return outcome;
}

class AsyncDevices : public ::testing::TestWithParam<std::string> {};

TEST_P(AsyncDevices, GiveTheHostDevicesLossesBitForBit) {
  static const graph::OpRegistry ops = ops::BuiltinOps();
  models::GptConfig config = testing::TinyGptConfig();
  config.attention = ops::AttentionKind::kFused;
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy(GetParam());
  options.devices = 4;
  const models::BuiltModel model = models::BuildGpt(ops, config, options);
  const Outcome host = Train(model, runtime::MakeDevice);
  // The devices live as long as the executor inside Train; only their counts are read after.
  testing::PollTally polls;
  const Outcome deferred = Train(model, [&](const plan::Device& d, const runtime::DevicePlace&) {
    auto device = std::make_unique<testing::DeferredHostDevice>(d.index());
    polls.Watch(*device);
    return device;
  });
  EXPECT_GT(polls.Total(), 0) << "no work was ever pending when polled: nothing was tested";
  ASSERT_EQ(host.losses.size(), 4u);
  EXPECT_EQ(deferred.losses, host.losses);
  // The deferred run used the planned memory as the host run did.
  EXPECT_EQ(deferred.result.arena_high_water, host.result.arena_high_water);
}

INSTANTIATE_TEST_SUITE_P(Strategies, AsyncDevices,
                         ::testing::Values("dp=2,tp=2", "dp=2,pp=2,mb=4,schedule=1f1b",
                                           "tp=2,pp=2,mb=4,schedule=gpipe,recompute=full"),
                         testing::StrategyTestName);

}  // namespace
}  // namespace twinflow
