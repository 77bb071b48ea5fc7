#include "simulator/shared_devices.h"

#include <algorithm>
#include <set>
#include <string>

#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_fold.h"

namespace twinflow::sim {
namespace {

void CheckSharable(const plan::Plan& plan, const Topology& topology, int physical) {
  if (physical > topology.devices()) {
    throw InvalidArgumentError("--physical-devices " + std::to_string(physical) +
                               ": the cluster has " + std::to_string(topology.devices()) +
                               " devices");
  }
  if (topology.spec().cores_per_node() > 0 || topology.spec().device().kind() == DEVICE_KIND_CPU) {
    throw InvalidArgumentError(
        "--physical-devices is for accelerators; a CPU host's devices share its cores "
        "(cores_per_node, which calibrate writes)");
  }
  for (const plan::Device& d : plan.devices()) {
    if (d.rank() != 0) {
      throw InvalidArgumentError(
          "--physical-devices models one process's logical devices; this Plan spans ranks");
    }
  }
}

// Each comm group's members all on one device (a collective through its memory) or each on
// its own (one over the links).
void CheckGroups(const plan::Plan& plan, const std::vector<int>& cluster_device) {
  for (int g = 0; g < plan.groups_size(); ++g) {
    std::set<int> distinct;
    for (int32_t d : plan.groups(g).devices()) distinct.insert(cluster_device[d]);
    const int members = plan.groups(g).devices_size();
    if (distinct.size() != 1 && static_cast<int>(distinct.size()) != members) {
      throw InvalidArgumentError(
          "comm group " + std::to_string(g) + " has " + std::to_string(members) + " members on " +
          std::to_string(distinct.size()) +
          " physical devices; the simulator shares a device only among all of a group's "
          "members or none");
    }
  }
}

}  // namespace

std::vector<int> ClusterDevicesOf(const plan::Plan& plan, const Topology& topology, int physical) {
  const plan::DeviceFold fold = plan::DeviceFold::Of(plan);
  if (fold.folded() && (physical > 0 || topology.spec().cores_per_node() > 0)) {
    throw InvalidArgumentError(
        "a folded Plan is simulated on accelerators of its own only, not on a CPU host's shared "
        "cores or with --physical-devices");
  }
  if (physical > 0) CheckSharable(plan, topology, physical);
  std::vector<int> cluster_device;
  for (const plan::Device& d : plan.devices()) {
    const int64_t last = fold.Image(d.index(), fold.copies - 1);  // the device itself unfolded
    if (physical == 0 && last >= topology.devices()) {
      throw InvalidArgumentError("the Plan uses device " + plan::EnumName(d.type()) + ":" +
                                 std::to_string(last) + " but the cluster has " +
                                 std::to_string(topology.devices()) + " devices");
    }
    cluster_device.push_back(static_cast<int>(physical > 0 ? d.index() % physical : d.index()));
  }
  if (physical > 0) CheckGroups(plan, cluster_device);
  return cluster_device;
}

bool SharesDevices(const std::vector<int>& cluster_device) {
  std::set<int> distinct(cluster_device.begin(), cluster_device.end());
  return distinct.size() < cluster_device.size();
}

// The moves of collective_compute.cc's Moves, each read once and written once (2 bytes of
// traffic per byte; a reduction reads its destination too: 3), with S = `bytes`, p members:
//   all_reduce: member 0's input copied to its output (not in place), p-1 inputs reduced into
//     it, the sum copied to the p-1 others: 2S + 3S(p-1) + 2S(p-1);
//   all_gather (S the output): p slabs into member 0's output, copied to the p-1 others:
//     2S + 2S(p-1);
//   reduce_scatter: per output (S/p), one copy and p-1 reductions: (2 + 3(p-1)) S;
//   all_to_all: every input's p parts once: 2S per member;
//   broadcast: the root's input to every output: 2S per member.
InMemoryCollective InMemoryCollectiveCost(CollectiveKind kind, int64_t members, int64_t bytes,
                                          bool in_place) {
  const double s = static_cast<double>(bytes);
  const double p = static_cast<double>(members);
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return in_place ? InMemoryCollective{5 * s * (p - 1), 2 * members - 2}
                      : InMemoryCollective{2 * s + 5 * s * (p - 1), 2 * members - 1};
    case CollectiveKind::kAllGather:
      return {2 * s * p, 2 * members - 1};
    case CollectiveKind::kReduceScatter:
      return {(3 * p - 1) * s, members * members};
    case CollectiveKind::kAllToAll:
      return {2 * s * p, members * members};
    case CollectiveKind::kBroadcast:
      return {2 * s * p, members};
  }
  return {};
}

}  // namespace twinflow::sim
