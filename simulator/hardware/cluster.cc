#include "simulator/hardware/cluster.h"

#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <map>

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
                 attention_efficiency: 0.6 gemm_tile: 128 gemm_k_overhead: 256 }
        intra_node { bandwidth: 300e9 latency_s: 3e-6 efficiency: 0.8 }
        inter_node { bandwidth: 25e9 latency_s: 6e-6 efficiency: 0.9 })"},
      {"dgx-h100", R"(
        name: "dgx-h100" devices_per_node: 8
        device { kind: DEVICE_KIND_GPU name: "H100-SXM5-80GB" peak_flops: 989e12 memory_bandwidth: 3.35e12
                 memory_bytes: 85899345920 launch_overhead_s: 4e-6
                 flops_efficiency: 0.81 memory_efficiency: 0.9
                 activation_memory_efficiency: 0.42 rowwise_memory_efficiency: 0.37
                 attention_efficiency: 0.35 gemm_tile: 128 gemm_k_overhead: 256 }
        intra_node { bandwidth: 450e9 latency_s: 2.5e-6 efficiency: 0.8 }
        inter_node { bandwidth: 50e9 latency_s: 5e-6 efficiency: 0.9 })"},
      {"hgx-h200", R"(
        name: "hgx-h200" devices_per_node: 8
        device { kind: DEVICE_KIND_GPU name: "H200-SXM-141GB" peak_flops: 989e12 memory_bandwidth: 4.8e12
                 memory_bytes: 141000000000 launch_overhead_s: 4e-6
                 flops_efficiency: 0.81 memory_efficiency: 0.9
                 activation_memory_efficiency: 0.42 rowwise_memory_efficiency: 0.37
                 attention_efficiency: 0.35 gemm_tile: 128 gemm_k_overhead: 256 }
        intra_node { bandwidth: 450e9 latency_s: 2.5e-6 efficiency: 0.8 }
        inter_node { bandwidth: 50e9 latency_s: 5e-6 efficiency: 0.9 })"},
  };
  return presets;
}

void CheckLink(const Link& link, const std::string& what) {
  if (!(link.bandwidth() > 0) || !(link.latency_s() >= 0) || !(link.efficiency() > 0) ||
      link.efficiency() > 1) {
    throw InvalidArgumentError("cluster spec: " + what +
                               " needs bandwidth > 0, latency_s >= 0 and efficiency in (0, 1]");
  }
}

}  // namespace

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
  if (spec.nodes() == 0) spec.set_nodes(1);
  ValidateClusterSpec(spec);
  return spec;
}

void ValidateClusterSpec(const ClusterSpec& spec) {
  if (spec.nodes() < 1 || spec.nodes() > (1 << 20)) {
    throw InvalidArgumentError("cluster spec: nodes must be in [1, 2^20]");
  }
  if (spec.devices_per_node() < 1 || spec.devices_per_node() > 4096) {
    throw InvalidArgumentError("cluster spec: devices_per_node must be in [1, 4096]");
  }
  const DeviceModel& d = spec.device();
  if (!(d.peak_flops() > 0) || !(d.memory_bandwidth() > 0) || d.memory_bytes() <= 0 ||
      !(d.launch_overhead_s() >= 0) || !(d.flops_efficiency() > 0) || d.flops_efficiency() > 1 ||
      !(d.memory_efficiency() > 0) || d.memory_efficiency() > 1) {
    throw InvalidArgumentError(
        "cluster spec: device needs peak_flops, memory_bandwidth, memory_bytes > 0, "
        "launch_overhead_s >= 0 and efficiencies in (0, 1]");
  }
  for (const double e : {d.activation_memory_efficiency(), d.rowwise_memory_efficiency(),
                         d.attention_efficiency()}) {
    if (!(e >= 0) || e > 1) {
      throw InvalidArgumentError(
          "cluster spec: device's activation, rowwise and attention efficiencies must be in "
          "[0, 1] (0: the device's general efficiency)");
    }
  }
  if (d.gemm_tile() < 0 || !(d.gemm_k_overhead() >= 0)) {
    throw InvalidArgumentError("cluster spec: device's gemm_tile and gemm_k_overhead must be >= 0");
  }
  const int nics = spec.nics_per_node();
  if (nics < 0 || nics > spec.devices_per_node() || (nics > 0 && spec.devices_per_node() % nics)) {
    throw InvalidArgumentError("cluster spec: nics_per_node must divide devices_per_node (" +
                               std::to_string(spec.devices_per_node()) + "), got " +
                               std::to_string(nics));
  }
  CheckLink(spec.intra_node(), "intra_node");
  CheckLink(spec.inter_node(), "inter_node");
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
