#pragma once
// Clusters for the simulator: presets, protobuf-text specs, and the topology questions the
// simulator asks (which node a device is on, which link joins two devices).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulator/hardware/cluster_spec.pb.h"

namespace twinflow::sim {

// The preset names: cpu-local, dgx-a100, dgx-h100, hgx-h200.
std::vector<std::string> PresetNames();
// A preset with `nodes` nodes. InvalidArgumentError naming the unknown preset.
ClusterSpec Preset(const std::string& name, int nodes);
// A preset name or the path of a ClusterSpec in protobuf text (.pbtxt), with `nodes` nodes
// (a preset: 1 unless given; a file: its own unless given). InvalidArgumentError naming the
// unknown preset, the unreadable file or the field out of range.
ClusterSpec LoadCluster(const std::string& cluster, std::optional<int> nodes);
// A spec in protobuf text; InvalidArgumentError naming the field or the parse problem.
ClusterSpec ParseClusterSpec(const std::string& text, const std::string& origin);
// InvalidArgumentError naming the first field out of range.
void ValidateClusterSpec(const ClusterSpec& spec);

// The bytes a device's arena may take: memory_bytes less reserved_bytes.
int64_t UsableMemoryBytes(const DeviceModel& device);
inline int64_t UsableMemoryBytes(const ClusterSpec& spec) {
  return UsableMemoryBytes(spec.device());
}

// What reports and traces call the cluster's devices (DeviceModel.kind): "gpu", "cpu" or
// "device"; and one of them: "gpu:3".
std::string DeviceKindName(const ClusterSpec& spec);
std::string DeviceName(const ClusterSpec& spec, int64_t index);

class Topology {
 public:
  explicit Topology(ClusterSpec spec);
  const ClusterSpec& spec() const { return spec_; }
  int devices() const { return spec_.nodes() * spec_.devices_per_node(); }
  int NodeOf(int device) const { return device / spec_.devices_per_node(); }
  // The device whose NIC ports `device` sends and receives through between nodes: itself, or
  // with nics_per_node < devices_per_node the first of the devices sharing its NIC.
  int NicOwner(int device) const {
    const int nics = spec_.nics_per_node() > 0 ? spec_.nics_per_node() : spec_.devices_per_node();
    const int sharing = spec_.devices_per_node() / nics;
    return device / sharing * sharing;
  }
  // The link two devices talk over; null for the same device (memory).
  const Link* LinkBetween(int a, int b) const;

 private:
  ClusterSpec spec_;
};

}  // namespace twinflow::sim
