#include "simulator/act_timing.h"

#include <algorithm>

#include "engine/core/dtype.h"
#include "engine/plan/kernel_key.h"
#include "engine/plan/plan_enums.h"

namespace twinflow::sim {

ActTiming::ActTiming(const plan::Plan& plan, const Topology& topology,
                     std::vector<int> cluster_device)
    : plan_(plan),
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
  const DeviceModel& d = topology_.spec().device();
  if (d.contended_memory_bandwidth() <= 0 || contention == 0) {
    return bytes / (d.memory_bandwidth() * d.memory_efficiency());
  }
  return bytes *
         ((1 - contention) / d.memory_bandwidth() + contention / d.contended_memory_bandwidth()) /
         d.memory_efficiency();
}

double ActTiming::ActSeconds(const plan::Task& t, double contention) {
  const DeviceModel& d = topology_.spec().device();
  double seconds = d.launch_overhead_s();
  int64_t out_bytes = 0;
  for (int64_t r : t.produced_regsts()) out_bytes += RegstBytes(r);
  switch (t.kind()) {
    case plan::COMPUTE: {
      const auto measured = kernel_seconds_.find(plan::KernelKey(t));
      if (measured == kernel_seconds_.end()) {
        return seconds + std::max(t.flops() / (d.peak_flops() * d.flops_efficiency()),
                                  MemorySeconds(static_cast<double>(t.bytes_moved()), contention));
      }
      const auto [alone, contended] = measured->second;
      return seconds + (contended > 0 ? alone + contention * (contended - alone) : alone);
    }
    case plan::COPY:
      return seconds + CopySeconds(t, contention);
    case plan::ACC:
    case plan::REPEAT:
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
  std::map<int, int64_t> by_source;  // source plan device -> bytes
  for (const plan::Transfer& tr : t.transfers()) {
    int64_t elements = 1;
    for (const plan::Range& r : tr.region().ranges()) elements *= r.end() - r.begin();
    const plan::Regst& src = plan_.regsts(static_cast<int>(tr.src_regst()));
    const int source = plan_.tasks(static_cast<int>(src.producer())).device();
    by_source[source] += elements * DTypeSize(plan::FromProto(src.tensor().dtype(), t.name()));
  }
  double seconds = 0;
  for (const auto& [source, bytes] : by_source) {
    const Link* link = topology_.LinkBetween(cluster_device_[source], cluster_device_[t.device()]);
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
