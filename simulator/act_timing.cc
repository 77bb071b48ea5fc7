#include "simulator/act_timing.h"

#include <algorithm>
#include <map>
#include <utility>

#include "engine/core/dtype.h"
#include "engine/plan/kernel_key.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_fold.h"

namespace twinflow::sim {

ActTiming::ActTiming(const plan::Plan& plan, const Topology& topology,
                     std::vector<int> cluster_device)
    : plan_(plan),
      fold_(plan::DeviceFold::Of(plan)),
      topology_(topology),
      cluster_device_(std::move(cluster_device)),
      intra_bytes_(plan.devices_size(), 0),
      inter_bytes_(plan.devices_size(), 0) {
  for (const KernelTime& k : topology.spec().kernel_times()) {
    kernel_seconds_[k.key()] = {k.seconds(), k.contended_seconds()};
  }
}

int64_t ActTiming::RegstBytes(int64_t regst) const {
  return plan_.regsts(static_cast<int>(regst)).bytes_per_slot();
}

double ActTiming::MemorySeconds(double bytes, double contention) const {
  return MemorySeconds(bytes, contention, topology_.spec().device().memory_efficiency());
}

double ActTiming::MemorySeconds(double bytes, double contention, double efficiency) const {
  const DeviceModel& d = topology_.spec().device();
  if (d.contended_memory_bandwidth() <= 0 || contention == 0) {
    return bytes / (d.memory_bandwidth() * efficiency);
  }
  return bytes *
         ((1 - contention) / d.memory_bandwidth() + contention / d.contended_memory_bandwidth()) /
         efficiency;
}

namespace {

// `value` when set (> 0), else `fallback`: a class the spec leaves at 0 takes the device's
// general efficiency.
double Or(double value, double fallback) { return value > 0 ? value : fallback; }

}  // namespace

double GemmWorkFactor(const plan::GemmShape& g, const DeviceModel& d) {
  if (g.m() <= 0 || g.n() <= 0 || g.k() <= 0) return 1.0;
  double factor = GemmKFactor(g.k(), d);
  if (d.gemm_tile() > 0) {
    const int64_t tile = d.gemm_tile();
    auto padded = [tile](int64_t x) { return static_cast<double>((x + tile - 1) / tile * tile); };
    factor *=
        padded(g.m()) / static_cast<double>(g.m()) * padded(g.n()) / static_cast<double>(g.n());
  }
  return factor;
}

ClassEfficiency EfficiencyOf(const DeviceModel& d, plan::KernelClass k) {
  ClassEfficiency e{d.flops_efficiency(), d.memory_efficiency()};
  switch (k) {
    case plan::KERNEL_ATTENTION:
      e.compute = Or(d.attention_efficiency(), e.compute);
      break;
    case plan::KERNEL_ROWWISE:
      e.memory = Or(d.rowwise_memory_efficiency(), e.memory);
      break;
    case plan::KERNEL_ACTIVATION:
      e.memory = Or(d.activation_memory_efficiency(), e.memory);
      break;
    default:  // GEMMs, streaming, or a Plan without classes
      break;
  }
  return e;
}

double GemmKFactor(int64_t k, const DeviceModel& d) {
  if (k <= 0) return 1.0;
  return (static_cast<double>(k) + d.gemm_k_overhead()) / static_cast<double>(k);
}

double ComputeSeconds(const plan::Task& t, const DeviceModel& d) {
  double compute = t.flops() / (d.peak_flops() * EfficiencyOf(d, t.kernel_class()).compute);
  if (t.kernel_class() == plan::KERNEL_GEMM) compute *= GemmWorkFactor(t.gemm(), d);
  return compute;
}

double ActTiming::KernelSeconds(const plan::Task& t, double contention) const {
  const DeviceModel& d = topology_.spec().device();
  const double memory = MemorySeconds(static_cast<double>(t.bytes_moved()), contention,
                                      EfficiencyOf(d, t.kernel_class()).memory);
  return std::max(ComputeSeconds(t, d), memory);
}

double ActTiming::ActSeconds(const plan::Task& t, double contention) {
  const DeviceModel& d = topology_.spec().device();
  double seconds = d.launch_overhead_s();
  int64_t out_bytes = 0;
  for (int64_t r : t.produced_regsts()) out_bytes += RegstBytes(r);
  switch (t.kind()) {
    case plan::COMPUTE: {
      // The key is a string of the op, attributes and shapes: not built without a table.
      if (kernel_seconds_.empty()) return seconds + KernelSeconds(t, contention);
      const auto measured = kernel_seconds_.find(plan::KernelKey(t));
      if (measured == kernel_seconds_.end()) return seconds + KernelSeconds(t, contention);
      const auto [alone, contended] = measured->second;
      return seconds + (contended > 0 ? alone + contention * (contended - alone) : alone);
    }
    case plan::COPY:
      return seconds + CopySeconds(t, contention);
    case plan::REPEAT:
      if (t.repeat_in_place()) return 0;  // its output is its input's bytes: no kernel at all
      [[fallthrough]];
    case plan::ACC:
      return seconds + MemorySeconds(2.0 * static_cast<double>(out_bytes), contention);
    case plan::ASSIGN: {  // copies its second input (the update) into the variable
      int64_t in_bytes = 0;
      for (int64_t r : t.consumed_regsts()) in_bytes = std::max(in_bytes, RegstBytes(r));
      return seconds + MemorySeconds(2.0 * static_cast<double>(in_bytes), contention);
    }
    case plan::SOURCE:
      return seconds + MemorySeconds(static_cast<double>(out_bytes), contention);
    default:
      return seconds;  // VARIABLE, SINK: nothing but the launch
  }
}

double ActTiming::CopySeconds(const plan::Task& t, double contention) {
  std::map<std::pair<int, int>, int64_t> by_source;  // (source plan device, copy) -> bytes
  for (const plan::Transfer& tr : t.transfers()) {
    int64_t elements = 1;
    for (const plan::Range& r : tr.region().ranges()) elements *= r.end() - r.begin();
    const plan::Regst& src = plan_.regsts(static_cast<int>(tr.src_regst()));
    const int source = plan_.tasks(static_cast<int>(src.producer())).device();
    by_source[{source, tr.src_copy()}] +=
        elements * DTypeSize(plan::FromProto(src.tensor().dtype(), t.name()));
  }
  double seconds = 0;
  for (const auto& [from, bytes] : by_source) {
    // The source's image in copy `from.second` sends (plan_fold.h); what it sends is counted
    // for its copy-0 device, whose own image does alike.
    const int source = from.first;
    const int sender = static_cast<int>(fold_.Image(cluster_device_[source], from.second));
    const Link* link = topology_.LinkBetween(sender, cluster_device_[t.device()]);
    if (!link) {
      seconds += MemorySeconds(2.0 * static_cast<double>(bytes), contention);
      continue;
    }
    seconds +=
        link->latency_s() + static_cast<double>(bytes) / (link->bandwidth() * link->efficiency());
    (link == &topology_.spec().inter_node() ? inter_bytes_ : intra_bytes_)[source] +=
        static_cast<double>(bytes);  // the source sends them
  }
  return seconds;
}

}  // namespace twinflow::sim
