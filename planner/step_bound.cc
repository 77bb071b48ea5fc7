#include "planner/step_bound.h"

#include <algorithm>
#include <map>
#include <vector>

#include "engine/compiler/op_task.h"
#include "engine/compiler/rates.h"
#include "simulator/act_timing.h"

namespace twinflow::planner {
namespace {

// The least time the kernels of every act of `op` on its devices add up to (ActTiming's, less
// the launches, counted apart, and the GEMM's tile padding): its logical flops or bytes at its
// class's efficiencies, whichever take longer. A GEMM's K overhead is counted at its logical
// K: a device's own K is at most that, so its share of overhead is at least as large.
double LeastSeconds(const graph::OpDef& def, const graph::OpCost& cost, const sim::DeviceModel& d) {
  const sim::ClassEfficiency e = sim::EfficiencyOf(d, compiler::PlanKernelClass(def.kernel_class));
  double compute = cost.flops / (d.peak_flops() * e.compute);
  if (def.kernel_class == graph::KernelClass::kGemm) compute *= sim::GemmKFactor(cost.gemm.k, d);
  // A CPU host's contended bandwidth is normally the lower; the higher one keeps it a bound.
  const double bandwidth = std::max(d.memory_bandwidth(), d.contended_memory_bandwidth());
  const double bytes = static_cast<double>(cost.bytes_read + cost.bytes_written);
  return std::max(compute, bytes / (bandwidth * e.memory));
}

}  // namespace

WorkProfile ProfileWork(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                        const sim::ClusterSpec& spec, int64_t micro_batches) {
  WorkProfile profile;
  profile.micro_batches = micro_batches;
  if (spec.kernel_times_size() > 0) return profile;
  profile.bounded = true;
  profile.launch_s = spec.device().launch_overhead_s();
  const std::vector<compiler::Rate> rates = compiler::OpRates(graph, registry);
  std::map<std::vector<int64_t>, WorkProfile::Placement> by_devices;
  std::vector<graph::TensorMeta> inputs;
  for (const graph::OpNode& op : graph.ops()) {
    const graph::OpDef& def = registry.Find(op.type);
    // Kernels on the compute stream; variables, inputs and assigns are cheaper acts or none.
    if (compiler::TaskKindOf(def.role) != plan::COMPUTE || !def.cost) continue;
    inputs.clear();
    for (const graph::TensorId t : op.inputs) inputs.push_back(graph.tensor(t).meta);
    WorkProfile::Placement& p = by_devices[op.placement.device_ids()];
    p.devices = op.placement.size();
    const double seconds =
        LeastSeconds(def, def.cost(graph::OpContext{op.type, op.attrs, inputs}), spec.device());
    if (rates[op.id] == compiler::Rate::kMicroBatch) {
      p.micro_batch_kernel_s += seconds;
      ++p.micro_batch_ops;
    } else {
      p.step_kernel_s += seconds;
      ++p.step_ops;
    }
  }
  for (auto& entry : by_devices) profile.placements.push_back(entry.second);
  return profile;
}

double StepTimeLowerBound(const WorkProfile& profile, int64_t micro_batches) {
  const double steps_of_work =
      micro_batches >= profile.micro_batches ? static_cast<double>(profile.micro_batches) : 0.0;
  double bound = 0;
  for (const WorkProfile::Placement& p : profile.placements) {
    const auto launches = static_cast<double>(p.step_ops + micro_batches * p.micro_batch_ops);
    const double kernels = p.step_kernel_s + steps_of_work * p.micro_batch_kernel_s;
    bound = std::max(bound, kernels / static_cast<double>(p.devices) + launches * profile.launch_s);
  }
  return bound;
}

}  // namespace twinflow::planner
