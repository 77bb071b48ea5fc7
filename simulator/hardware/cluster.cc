#include "simulator/hardware/cluster.h"

#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "engine/core/error.h"
#include "engine/core/file_io.h"

namespace twinflow::sim {
namespace {

// Per device and direction. Sources and reasoning: docs/simulator.md#presets.
const std::map<std::string, std::string>& PresetTexts() {
  static const std::map<std::string, std::string> presets = {
      {"cpu-local", R"(
        name: "cpu-local" devices_per_node: 2
        device { kind: DEVICE_KIND_CPU name: "host core" peak_flops: 1.2e11 memory_bandwidth: 1.0e10
                 memory_bytes: 12884901888 launch_overhead_s: 2e-6
                 flops_efficiency: 1.0 memory_efficiency: 1.0 }
        intra_node { bandwidth: 6e9 latency_s: 5e-6 efficiency: 1.0 }
        inter_node { bandwidth: 1.25e9 latency_s: 3e-5 efficiency: 1.0 })"},
      {"dgx-a100", R"(
        name: "dgx-a100" devices_per_node: 8
        device { kind: DEVICE_KIND_GPU name: "A100-SXM4-80GB" peak_flops: 312e12 memory_bandwidth: 2.039e12
                 memory_bytes: 85899345920 launch_overhead_s: 4e-6
                 flops_efficiency: 0.81 memory_efficiency: 0.9
                 activation_memory_efficiency: 0.42 rowwise_memory_efficiency: 0.37
                 attention_efficiency: 0.6 gemm_tile: 128 gemm_k_overhead: 256
                 reserved_bytes: 1610612736 }
        intra_node { bandwidth: 300e9 latency_s: 3e-6 efficiency: 0.8 }
        inter_node { bandwidth: 25e9 latency_s: 6e-6 efficiency: 0.9 })"},
      {"dgx-h100", R"(
        name: "dgx-h100" devices_per_node: 8
        device { kind: DEVICE_KIND_GPU name: "H100-SXM5-80GB" peak_flops: 989e12 memory_bandwidth: 3.35e12
                 memory_bytes: 85899345920 launch_overhead_s: 4e-6
                 flops_efficiency: 0.81 memory_efficiency: 0.9
                 activation_memory_efficiency: 0.42 rowwise_memory_efficiency: 0.37
                 attention_efficiency: 0.35 gemm_tile: 128 gemm_k_overhead: 256
                 reserved_bytes: 1610612736 }
        intra_node { bandwidth: 450e9 latency_s: 2.5e-6 efficiency: 0.8 }
        inter_node { bandwidth: 50e9 latency_s: 5e-6 efficiency: 0.9 })"},
      {"hgx-h200", R"(
        name: "hgx-h200" devices_per_node: 8
        device { kind: DEVICE_KIND_GPU name: "H200-SXM-141GB" peak_flops: 989e12 memory_bandwidth: 4.8e12
                 memory_bytes: 141000000000 launch_overhead_s: 4e-6
                 flops_efficiency: 0.81 memory_efficiency: 0.9
                 activation_memory_efficiency: 0.42 rowwise_memory_efficiency: 0.37
                 attention_efficiency: 0.35 gemm_tile: 128 gemm_k_overhead: 256
                 reserved_bytes: 1610612736 }
        intra_node { bandwidth: 450e9 latency_s: 2.5e-6 efficiency: 0.8 }
        inter_node { bandwidth: 50e9 latency_s: 5e-6 efficiency: 0.9 })"},
  };
  return presets;
}

[[noreturn]] void Refuse(const std::string& what) {
  throw InvalidArgumentError("cluster spec: " + what);
}

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

// `value` finite and in [low, high]: the bounds hold every real machine by orders of
// magnitude, and keep the cost arithmetic far from overflow and underflow (a bandwidth of
// 1e-30 once made transfers cost infinity and broke lowering).
void CheckRange(double value, double low, double high, const std::string& field) {
  if (!std::isfinite(value) || value < low || value > high) {
    Refuse(field + " is " + Number(value) + ", outside [" + Number(low) + ", " + Number(high) +
           "]");
  }
}

void CheckLink(const Link& link, const std::string& what) {
  CheckRange(link.bandwidth(), 1e3, 1e18, what + ".bandwidth (bytes/s)");
  CheckRange(link.latency_s(), 0, 10, what + ".latency_s");
  if (!(link.efficiency() > 0)) Refuse(what + ".efficiency must be in (0, 1]");
  CheckRange(link.efficiency(), 0, 1, what + ".efficiency");
}

void CheckDevice(const DeviceModel& d) {
  CheckRange(d.peak_flops(), 1e3, 1e21, "device.peak_flops");
  CheckRange(d.memory_bandwidth(), 1e3, 1e18, "device.memory_bandwidth (bytes/s)");
  CheckRange(d.contended_memory_bandwidth(), 0, 1e18,
             "device.contended_memory_bandwidth (0: none)");
  if (d.memory_bytes() < (int64_t{1} << 20) || d.memory_bytes() > (int64_t{1} << 50)) {
    Refuse("device.memory_bytes is " + std::to_string(d.memory_bytes()) +
           ", outside [1 MiB, 1 PiB]");
  }
  if (d.reserved_bytes() < 0 || d.reserved_bytes() >= d.memory_bytes()) {
    Refuse("device.reserved_bytes is " + std::to_string(d.reserved_bytes()) +
           ", outside [0, memory_bytes " + std::to_string(d.memory_bytes()) + ")");
  }
  CheckRange(d.launch_overhead_s(), 0, 1, "device.launch_overhead_s");
  for (const auto& [value, field] : {std::pair{d.flops_efficiency(), "flops_efficiency"},
                                     std::pair{d.memory_efficiency(), "memory_efficiency"}}) {
    if (!(value > 0)) Refuse(std::string("device.") + field + " must be in (0, 1]");
    CheckRange(value, 0, 1, std::string("device.") + field);
  }
  for (const auto& [value, field] :
       {std::pair{d.activation_memory_efficiency(), "activation_memory_efficiency"},
        std::pair{d.rowwise_memory_efficiency(), "rowwise_memory_efficiency"},
        std::pair{d.attention_efficiency(), "attention_efficiency"}}) {
    CheckRange(value, 0, 1, std::string("device.") + field + " (0: the general efficiency)");
  }
  if (d.gemm_tile() < 0 || d.gemm_tile() > 65536) {
    Refuse("device.gemm_tile is " + std::to_string(d.gemm_tile()) + ", outside [0, 65536]");
  }
  CheckRange(d.gemm_k_overhead(), 0, 1e6, "device.gemm_k_overhead");
}

void CheckKernelTimes(const ClusterSpec& spec) {
  for (const KernelTime& k : spec.kernel_times()) {
    const std::string what = "kernel_times '" + k.key() + "'";
    CheckRange(k.seconds(), 0, 1e6, what + " seconds");
    CheckRange(k.contended_seconds(), 0, 1e6, what + " contended_seconds (0: none)");
  }
}

}  // namespace

int64_t UsableMemoryBytes(const DeviceModel& device) {
  return device.memory_bytes() - device.reserved_bytes();
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const auto& [name, text] : PresetTexts()) names.push_back(name);
  return names;
}

ClusterSpec Preset(const std::string& name, int nodes) {
  const auto it = PresetTexts().find(name);
  if (it == PresetTexts().end()) {
    std::string known;
    for (const std::string& n : PresetNames()) known += (known.empty() ? "" : ", ") + n;
    throw InvalidArgumentError("unknown cluster '" + name + "' (presets: " + known +
                               "; or a .pbtxt file)");
  }
  ClusterSpec spec = ParseClusterSpec(it->second, "preset " + name);
  spec.set_nodes(nodes);
  ValidateClusterSpec(spec);
  return spec;
}

ClusterSpec LoadCluster(const std::string& cluster, std::optional<int> nodes) {
  if (!cluster.ends_with(".pbtxt")) return Preset(cluster, nodes.value_or(1));
  ClusterSpec spec = ParseClusterSpec(ReadFile(cluster), cluster);
  if (nodes) spec.set_nodes(*nodes);
  ValidateClusterSpec(spec);
  return spec;
}

ClusterSpec ParseClusterSpec(const std::string& text, const std::string& origin) {
  ClusterSpec spec;
  const google::protobuf::LogSilencer silence;
  if (!google::protobuf::TextFormat::ParseFromString(text, &spec)) {
    throw InvalidArgumentError(origin + ": not a ClusterSpec in protobuf text");
  }
  if (!spec.has_nodes()) spec.set_nodes(1);
  ValidateClusterSpec(spec);
  return spec;
}

void ValidateClusterSpec(const ClusterSpec& spec) {
  if (spec.nodes() < 1 || spec.nodes() > (1 << 20)) {
    Refuse("nodes is " + std::to_string(spec.nodes()) + ", outside [1, 2^20]");
  }
  if (spec.devices_per_node() < 1 || spec.devices_per_node() > 4096) {
    Refuse("devices_per_node is " + std::to_string(spec.devices_per_node()) +
           ", outside [1, 4096]");
  }
  if (spec.has_cores_per_node() && (spec.cores_per_node() < 1 || spec.cores_per_node() > 65536)) {
    Refuse("cores_per_node is " + std::to_string(spec.cores_per_node()) +
           ", outside [1, 65536] (leave it out when each device has its own cores)");
  }
  CheckDevice(spec.device());
  const int nics = spec.nics_per_node();
  if (nics < 0 || nics > spec.devices_per_node() || (nics > 0 && spec.devices_per_node() % nics)) {
    Refuse("nics_per_node must divide devices_per_node (" +
           std::to_string(spec.devices_per_node()) + "), got " + std::to_string(nics));
  }
  CheckLink(spec.intra_node(), "intra_node");
  CheckLink(spec.inter_node(), "inter_node");
  CheckKernelTimes(spec);
}

Topology::Topology(ClusterSpec spec) : spec_(std::move(spec)) { ValidateClusterSpec(spec_); }

const Link* Topology::LinkBetween(int a, int b) const {
  if (a == b) return nullptr;
  return NodeOf(a) == NodeOf(b) ? &spec_.intra_node() : &spec_.inter_node();
}

std::string DeviceKindName(const ClusterSpec& spec) {
  switch (spec.device().kind()) {
    case DEVICE_KIND_GPU:
      return "gpu";
    case DEVICE_KIND_CPU:
      return "cpu";
    default:
      return "device";
  }
}

std::string DeviceName(const ClusterSpec& spec, int64_t index) {
  return DeviceKindName(spec) + ":" + std::to_string(index);
}

}  // namespace twinflow::sim
