// GPU calibration's two halves, checked where no GPU is: the runtime's device timing
// (engine/runtime/device_timing.h) run on a HostDevice, and the simulator's fit
// (simulator/calibration_fit.h) recovering the efficiencies that generated its measurements.
#include "simulator/calibration_fit.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "engine/compiler/compile.h"
#include "engine/ops/builtin_ops.h"
#include "engine/plan/kernel_key.h"
#include "engine/runtime/device_timing.h"
#include "engine/runtime/host_device.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "kernels/cpu/cpu_kernels.h"
#include "models/model.h"
#include "simulator/act_timing.h"
#include "tests/support/tiny_gpt.h"

namespace twinflow::sim {
namespace {

plan::Plan TinyGptPlan(ops::AttentionKind attention) {
  static const graph::OpRegistry ops = ops::BuiltinOps();
  models::GptConfig config = testing::TinyGptConfig();
  config.attention = attention;
  const models::BuiltModel model = models::BuildGpt(ops, config, models::BuildOptions{});
  compiler::CompileOptions options;
  options.lower.fetches = {model.loss};
  return compiler::Compile(model.graph, ops, sbp::AlphaBetaCostModel(), options).plan;
}

std::set<std::string> ComputeKeys(const plan::Plan& plan) {
  std::set<std::string> keys;
  for (const plan::Task& t : plan.tasks()) {
    if (t.kind() == plan::COMPUTE) keys.insert(plan::KernelKey(t));
  }
  return keys;
}

TEST(DeviceTiming, TimesEveryComputeKernelOnceThroughTheDevice) {
  const plan::Plan plan = TinyGptPlan(ops::AttentionKind::kFused);
  const kernels::KernelRegistry kernels = kernels::CpuKernels();
  const std::vector<runtime::PreparedTask> tasks = runtime::PrepareTasks(plan, kernels);
  runtime::HostDevice device(0);
  const std::map<std::string, double> seconds = runtime::TimeKernels(tasks, device, 5);
  EXPECT_EQ(seconds.size(), ComputeKeys(plan).size());
  for (const auto& [key, s] : seconds) EXPECT_GT(s, 0) << key;
  runtime::HostDevice fresh(0);
  EXPECT_GT(runtime::DeviceCopyBandwidth(fresh, int64_t{8} << 20), 1e8);  // bytes/s
}

// Times each kernel would take on `truth` if bound by its class's resource alone.
DeviceMeasurements Generated(const plan::Plan& plan, const DeviceModel& truth) {
  DeviceMeasurements m;
  for (const plan::Task& t : plan.tasks()) {
    if (t.kind() != plan::COMPUTE) continue;
    const ClassEfficiency e = EfficiencyOf(truth, t.kernel_class());
    const bool compute =
        t.kernel_class() == plan::KERNEL_GEMM || t.kernel_class() == plan::KERNEL_ATTENTION;
    m.kernel_seconds[plan::KernelKey(t)] =
        compute ? ComputeSeconds(t, truth)
                : static_cast<double>(t.bytes_moved()) / (truth.memory_bandwidth() * e.memory);
  }
  m.copy_bandwidth = 0.7 * truth.memory_bandwidth();
  m.launch_overhead_s = 12e-6;
  return m;
}

TEST(CalibrationFit, RecoversTheEfficienciesItsMeasurementsCameFrom) {
  for (ops::AttentionKind attention : {ops::AttentionKind::kFused, ops::AttentionKind::kUnfused}) {
    const plan::Plan plan = TinyGptPlan(attention);
    ClusterSpec truth = Preset("hgx-h200", 1);
    DeviceModel& d = *truth.mutable_device();
    d.set_flops_efficiency(0.52);
    d.set_attention_efficiency(0.31);
    d.set_activation_memory_efficiency(0.44);
    d.set_rowwise_memory_efficiency(0.27);
    ClusterSpec fitted = Preset("hgx-h200", 1);  // the data sheet, the preset's efficiencies
    const std::vector<ClassFit> fits =
        FitDeviceModel(plan, Generated(plan, truth.device()), fitted, 0);
    const DeviceModel& f = fitted.device();
    EXPECT_NEAR(f.flops_efficiency(), 0.52, 1e-12);
    EXPECT_NEAR(f.activation_memory_efficiency(), 0.44, 1e-12);
    EXPECT_NEAR(f.rowwise_memory_efficiency(), 0.27, 1e-12);
    const bool fused = attention == ops::AttentionKind::kFused;
    EXPECT_NEAR(f.attention_efficiency(), fused ? 0.31 : 0.35, 1e-12);  // unfused: kept
    EXPECT_NEAR(f.memory_efficiency(), 0.7, 1e-12);
    EXPECT_EQ(f.launch_overhead_s(), 12e-6);
    EXPECT_EQ(f.kind(), DEVICE_KIND_GPU);
    EXPECT_EQ(static_cast<size_t>(fitted.kernel_times_size()), ComputeKeys(plan).size());
    for (const ClassFit& fit : fits) {
      const bool expected = fit.kernel_class != plan::KERNEL_ATTENTION || fused;
      EXPECT_EQ(fit.kernels > 0, expected) << plan::KernelClass_Name(fit.kernel_class);
    }
  }
}

TEST(CalibrationFit, KeepsEfficienciesWithinOneAndSkipsShortKernels) {
  const plan::Plan plan = TinyGptPlan(ops::AttentionKind::kFused);
  ClusterSpec spec = Preset("hgx-h200", 1);
  DeviceMeasurements fast = Generated(plan, spec.device());
  for (auto& [key, s] : fast.kernel_seconds) s /= 10;  // faster than the data sheet allows
  fast.copy_bandwidth = 3 * spec.device().memory_bandwidth();
  FitDeviceModel(plan, fast, spec, 0);
  EXPECT_EQ(spec.device().flops_efficiency(), 1.0);
  EXPECT_EQ(spec.device().memory_efficiency(), 1.0);
  ClusterSpec kept = Preset("hgx-h200", 1);
  const double before = kept.device().flops_efficiency();
  for (const ClassFit& fit : FitDeviceModel(plan, Generated(plan, kept.device()), kept, 1.0)) {
    EXPECT_EQ(fit.kernels, 0);  // none lasts a second: every class keeps the spec's value
  }
  EXPECT_EQ(kept.device().flops_efficiency(), before);
}

}  // namespace
}  // namespace twinflow::sim
