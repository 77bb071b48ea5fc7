#include "simulator/calibration_fit.h"

#include <algorithm>
#include <set>

#include "engine/plan/kernel_key.h"
#include "simulator/act_timing.h"

namespace twinflow::sim {
namespace {

// A task's time on `d` at efficiency 1 of its class's binding resource: a GEMM's or the
// attention's flops (a GEMM's weighted by its tiles), or another class's bytes.
double IdealSeconds(const plan::Task& t, const DeviceModel& d) {
  switch (t.kernel_class()) {
    case plan::KERNEL_GEMM:
      return t.flops() * GemmWorkFactor(t.gemm(), d) / d.peak_flops();
    case plan::KERNEL_ATTENTION:
      return t.flops() / d.peak_flops();
    default:
      return static_cast<double>(t.bytes_moved()) / d.memory_bandwidth();
  }
}

double Clamp(double efficiency) { return std::clamp(efficiency, 1e-6, 1.0); }

void SetEfficiency(DeviceModel& d, plan::KernelClass k, double e) {
  switch (k) {
    case plan::KERNEL_GEMM:
      d.set_flops_efficiency(e);
      break;
    case plan::KERNEL_ATTENTION:
      d.set_attention_efficiency(e);
      break;
    case plan::KERNEL_ACTIVATION:
      d.set_activation_memory_efficiency(e);
      break;
    case plan::KERNEL_ROWWISE:
      d.set_rowwise_memory_efficiency(e);
      break;
    default:
      break;
  }
}

}  // namespace

std::vector<ClassFit> FitDeviceModel(const plan::Plan& plan, const DeviceMeasurements& measured,
                                     ClusterSpec& spec, double min_seconds) {
  DeviceModel& d = *spec.mutable_device();
  std::map<plan::KernelClass, std::pair<double, double>> sums;  // ideal, measured
  std::map<plan::KernelClass, int> counts;
  std::set<std::string> seen;
  for (const plan::Task& t : plan.tasks()) {
    if (t.kind() != plan::COMPUTE) continue;
    const std::string key = plan::KernelKey(t);
    const auto it = measured.kernel_seconds.find(key);
    if (it == measured.kernel_seconds.end() || !seen.insert(key).second) continue;
    if (it->second < min_seconds) continue;
    sums[t.kernel_class()].first += IdealSeconds(t, d);
    sums[t.kernel_class()].second += it->second;
    ++counts[t.kernel_class()];
  }
  std::vector<ClassFit> fits;
  for (plan::KernelClass k :
       {plan::KERNEL_GEMM, plan::KERNEL_ATTENTION, plan::KERNEL_ACTIVATION, plan::KERNEL_ROWWISE}) {
    ClassFit fit{k, 0, counts[k]};
    if (fit.kernels > 0) {
      fit.efficiency = Clamp(sums[k].first / sums[k].second);
      SetEfficiency(d, k, fit.efficiency);
    }
    fits.push_back(fit);
  }
  if (measured.copy_bandwidth > 0) {
    d.set_memory_efficiency(Clamp(measured.copy_bandwidth / d.memory_bandwidth()));
  }
  d.set_kind(DEVICE_KIND_GPU);
  d.set_launch_overhead_s(measured.launch_overhead_s);
  spec.clear_kernel_times();
  for (const auto& [key, seconds] : measured.kernel_seconds) {
    KernelTime* k = spec.add_kernel_times();
    k->set_key(key);
    k->set_seconds(seconds);
  }
  return fits;
}

}  // namespace twinflow::sim
