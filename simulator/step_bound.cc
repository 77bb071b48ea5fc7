#include "simulator/step_bound.h"

#include <algorithm>
#include <map>
#include <vector>

#include "engine/compiler/kernel_class.h"
#include "simulator/act_timing.h"

namespace twinflow::sim {
namespace {

// The roles whose ops become COMPUTE tasks (lower.cc's TaskKindOf): kernels on the compute
// stream. Variables, inputs and assigns are left out (their acts are cheaper or none).
bool RunsAKernel(graph::OpRole role) {
  switch (role) {
    case graph::OpRole::kCompute:
    case graph::OpRole::kOptimizerUpdate:
    case graph::OpRole::kStepIncrement:
    case graph::OpRole::kGradientStatistic:
      return true;
    default:
      return false;
  }
}

// The least time every act of `op` on its devices adds up to (ActTiming::ActSeconds without
// the GEMM's tile padding): one launch on each device, and its logical flops or bytes at its
// class's efficiencies, whichever take longer. A GEMM's K overhead is counted at its logical
// K: a device's own K is at most that, so its share of overhead is at least as large.
double LeastSeconds(const graph::OpDef& def, const graph::OpCost& cost, int64_t devices,
                    const DeviceModel& d) {
  const ClassEfficiency e = EfficiencyOf(d, compiler::PlanKernelClass(def.kernel_class));
  double compute = cost.flops / (d.peak_flops() * e.compute);
  if (def.kernel_class == graph::KernelClass::kGemm) compute *= GemmKFactor(cost.gemm.k, d);
  // A CPU host's contended bandwidth is normally the lower; the higher one keeps it a bound.
  const double bandwidth = std::max(d.memory_bandwidth(), d.contended_memory_bandwidth());
  const double bytes = static_cast<double>(cost.bytes_read + cost.bytes_written);
  return static_cast<double>(devices) * d.launch_overhead_s() +
         std::max(compute, bytes / (bandwidth * e.memory));
}

}  // namespace

double StepTimeLowerBound(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                          const ClusterSpec& spec) {
  if (spec.kernel_times_size() > 0) return 0;
  // Seconds of work by placement: the devices that share it.
  std::map<std::vector<int64_t>, double> work;
  std::vector<graph::TensorMeta> inputs;
  for (const graph::OpNode& op : graph.ops()) {
    const graph::OpDef& def = registry.Find(op.type);
    if (!RunsAKernel(def.role) || !def.cost) continue;
    inputs.clear();
    for (const graph::TensorId t : op.inputs) inputs.push_back(graph.tensor(t).meta);
    const graph::OpCost cost = def.cost(graph::OpContext{op.type, op.attrs, inputs});
    work[op.placement.device_ids()] += LeastSeconds(def, cost, op.placement.size(), spec.device());
  }
  double bound = 0;
  for (const auto& [devices, seconds] : work) {
    bound = std::max(bound, seconds / static_cast<double>(devices.size()));
  }
  return bound;
}

}  // namespace twinflow::sim
