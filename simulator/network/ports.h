#pragma once
// The physical links of a cluster as the flow model sees them: every device has an intra-node
// port (to NVLink / NVSwitch or the host's memory bus) and a NIC port to the switch, each with
// an outgoing and an incoming direction of its own (links are full duplex). A transfer from
// device a to device b on the same node uses IntraOut(a) and IntraIn(b); across nodes NicOut(a)
// and NicIn(b), of the devices owning the NICs when devices share one (nics_per_node). The
// switches themselves are non-blocking, so only ports are shared.
#include <vector>

#include "simulator/hardware/cluster.h"

namespace twinflow::sim {

enum class Port { kIntraOut = 0, kIntraIn = 1, kNicOut = 2, kNicIn = 3 };

constexpr int kPortsPerDevice = 4;

inline int LinkId(int device, Port port) {
  return device * kPortsPerDevice + static_cast<int>(port);
}
inline bool IsNicLink(int link) { return link % kPortsPerDevice >= 2; }

// A device's NIC port `port` (kNicOut or kNicIn): its own, or the one it shares
// (Topology::NicOwner); the other devices' NIC links then carry nothing.
inline int NicLink(const Topology& topology, int device, Port port) {
  return LinkId(topology.NicOwner(device), port);
}

// The two links a transfer from `from` to `to` (cluster devices, different) crosses: the
// sender's outgoing port and the receiver's incoming one, both intra-node or both NIC.
inline std::vector<int> PathLinks(const Topology& topology, int from, int to) {
  if (topology.NodeOf(from) == topology.NodeOf(to)) {
    return {LinkId(from, Port::kIntraOut), LinkId(to, Port::kIntraIn)};
  }
  return {NicLink(topology, from, Port::kNicOut), NicLink(topology, to, Port::kNicIn)};
}

// Bytes per second each link moves: the spec's bandwidth times its efficiency.
inline std::vector<double> LinkBandwidths(const Topology& topology) {
  const ClusterSpec& spec = topology.spec();
  const double intra = spec.intra_node().bandwidth() * spec.intra_node().efficiency();
  const double nic = spec.inter_node().bandwidth() * spec.inter_node().efficiency();
  std::vector<double> bandwidths;
  bandwidths.reserve(static_cast<size_t>(topology.devices()) * kPortsPerDevice);
  for (int d = 0; d < topology.devices(); ++d) {
    bandwidths.insert(bandwidths.end(), {intra, intra, nic, nic});
  }
  return bandwidths;
}

}  // namespace twinflow::sim
