#include "engine/sbp/alpha_beta_cost_model.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include "engine/core/double_binary_tree.h"
#include "engine/core/error.h"

namespace twinflow::sbp {
namespace {

// A "hop" that stays on one device is free.
const LinkParams kSameDeviceLink{std::numeric_limits<double>::infinity(), 0.0};

// round(num / den) for non-negative num and positive den, halves rounded up.
int64_t RoundDiv(int64_t num, int64_t den) { return (2 * num + den) / (2 * den); }

void AddBytes(LinkBytes& out, LinkClass link, int64_t bytes) {
  if (bytes > 0) out[link] += bytes;
}

}  // namespace

AlphaBetaConfig AlphaBetaPreset(const std::string& name) {
  AlphaBetaConfig config;
  if (name == "accelerator") return config;
  if (name == "cpu-host") {
    // Measured on the 2-core development host (bench/README.md): ~120 GFLOP/s sgemm per core;
    // copies between in-process devices are memcpy-bound.
    config.peak_flops = 1.2e11;
    config.memory_bandwidth = 1e10;
    config.launch_overhead = 1e-6;
    config.links = {{LinkClass::kIntraNode, {5e9, 1e-6}},
                    {LinkClass::kInterNode, {3e9, 5e-6}},
                    {LinkClass::kHostDevice, {1e10, 5e-6}}};
    return config;
  }
  throw InvalidArgumentError("unknown cost model '" + name +
                             "' (expected accelerator or cpu-host)");
}

AlphaBetaCostModel::AlphaBetaCostModel(AlphaBetaConfig config) : config_(std::move(config)) {
  if (config_.devices_per_node < 1) {
    throw InvalidArgumentError("devices_per_node must be at least 1, got " +
                               std::to_string(config_.devices_per_node));
  }
  for (LinkClass link : {LinkClass::kIntraNode, LinkClass::kInterNode, LinkClass::kHostDevice}) {
    if (!config_.links.count(link)) {
      throw InvalidArgumentError(std::string("cost model has no parameters for the ") +
                                 LinkClassName(link) + " link");
    }
  }
  if (!(config_.peak_flops > 0) || !(config_.memory_bandwidth > 0) ||
      !(config_.launch_overhead >= 0)) {
    throw InvalidArgumentError(
        "compute parameters must be positive (peak flops, memory "
        "bandwidth) and non-negative (launch overhead)");
  }
  link_table_[static_cast<size_t>(LinkClass::kSameDevice)] = kSameDeviceLink;
  for (const auto& [link, params] : config_.links) {
    if (link != LinkClass::kSameDevice) link_table_[static_cast<size_t>(link)] = params;
    // !(x > 0) also rejects NaN.
    if (!(params.bandwidth > 0)) {
      throw InvalidArgumentError(std::string(LinkClassName(link)) +
                                 " link bandwidth must be positive, got " +
                                 std::to_string(params.bandwidth));
    }
    if (!(params.latency >= 0)) {
      throw InvalidArgumentError(std::string(LinkClassName(link)) +
                                 " link latency must not be negative, got " +
                                 std::to_string(params.latency));
    }
  }
  // The least latency and the widest bandwidth of any link between distinct devices.
  bool first = true;
  for (const auto& [link, params] : config_.links) {
    if (link == LinkClass::kSameDevice) continue;
    fastest_.latency = first ? params.latency : std::min(fastest_.latency, params.latency);
    fastest_.bandwidth = first ? params.bandwidth : std::max(fastest_.bandwidth, params.bandwidth);
    first = false;
  }
  if (first) fastest_ = LinkParams{0.0, 0.0};
}

const LinkParams& AlphaBetaCostModel::Link(LinkClass link) const {
  return link_table_[static_cast<size_t>(link)];
}

LinkClass AlphaBetaCostModel::Classify(const DeviceId& a, const DeviceId& b) const {
  if (a == b) return LinkClass::kSameDevice;
  const int64_t node_a = a.index / config_.devices_per_node;
  const int64_t node_b = b.index / config_.devices_per_node;
  if (node_a != node_b) return LinkClass::kInterNode;
  return a.type == b.type ? LinkClass::kIntraNode : LinkClass::kHostDevice;
}

LinkClass AlphaBetaCostModel::SlowestRingClass(const std::vector<DeviceId>& group) const {
  LinkClass slowest = LinkClass::kSameDevice;
  const size_t p = group.size();
  if (p <= 1) return slowest;
  for (size_t i = 0; i < p; ++i) {
    const LinkClass c = Classify(group[i], group[(i + 1) % p]);
    const LinkParams& cand = Link(c);
    const LinkParams& best = Link(slowest);
    if (cand.bandwidth < best.bandwidth ||
        (cand.bandwidth == best.bandwidth && cand.latency > best.latency)) {
      slowest = c;
    }
  }
  return slowest;
}

AlphaBetaCostModel::NodeRuns AlphaBetaCostModel::RunsOnNodes(
    const std::vector<DeviceId>& group) const {
  NodeRuns runs;
  int64_t run = 0;
  int64_t node = -1;
  const auto close = [&] {
    if (run == 0) return;
    runs.square_sum += run * run;
    runs.equal = runs.nodes == 0 || (runs.equal && run == runs.first);
    if (runs.nodes == 0) runs.first = run;
    ++runs.nodes;
  };
  for (size_t i = 0; i < group.size(); ++i) {
    if (i > 0 && (group[i].index <= group[i - 1].index || group[i].type != group[0].type)) {
      return {};  // not ascending or not one type: valid stays false
    }
    const int64_t n = group[i].index / config_.devices_per_node;
    if (n != node) {
      close();
      run = 0;
      node = n;
    }
    ++run;
  }
  close();
  runs.valid = true;
  return runs;
}

int64_t AlphaBetaCostModel::WholeNodeMembers(const std::vector<DeviceId>& group) const {
  if (const NodeRuns runs = RunsOnNodes(group); runs.valid) {
    return runs.nodes > 1 && runs.equal ? runs.first : 0;
  }
  std::map<int64_t, int64_t> members;  // node -> devices of the group on it
  for (const DeviceId& d : group) {
    if (d.type != group.front().type) return 0;
    ++members[d.index / config_.devices_per_node];
  }
  const int64_t k = members.begin()->second;
  for (const auto& [node, count] : members) {
    if (count != k) return 0;
  }
  return members.size() > 1 ? k : 0;
}

int64_t AlphaBetaCostModel::RingRails(const std::vector<DeviceId>& group) const {
  return std::max<int64_t>(1, WholeNodeMembers(group));
}

double AlphaBetaCostModel::WholeNodesAllReduceTime(int64_t nodes, int64_t k, int64_t bytes) const {
  const LinkParams& intra = Link(LinkClass::kIntraNode);
  const LinkParams& inter = Link(LinkClass::kInterNode);
  const double s = static_cast<double>(bytes), shard = s / static_cast<double>(k);
  const auto n = static_cast<double>(nodes);
  const double inside =
      2.0 * (static_cast<double>(k - 1) * intra.latency +
             static_cast<double>(k - 1) / static_cast<double>(k) * s / intra.bandwidth);
  const double tree = 2.0 * TreeDepth(static_cast<int>(nodes)) * inter.latency +
                      MaxTreeDegree(static_cast<int>(nodes)) * shard / 2.0 / inter.bandwidth;
  if (k == 1) return tree;  // the ring between the nodes is the plain ring
  const double ring = 2.0 * (n - 1) * inter.latency + 2.0 * (n - 1) / n * shard / inter.bandwidth;
  return inside + std::min(ring, tree);
}

double AlphaBetaCostModel::RingTime(CollectiveKind kind, int64_t p, int64_t bytes, LinkClass link,
                                    int64_t rails) const {
  const LinkParams& params = Link(link);
  const double alpha = params.latency;
  double s_over_b = static_cast<double>(bytes) / params.bandwidth;
  if (rails > 1) {  // each NIC carries 1/k of the ring, each fabric port the other (k-1)/k
    const double k = static_cast<double>(rails);
    s_over_b = std::max(s_over_b / k, static_cast<double>(bytes) * (k - 1) / k /
                                          Link(LinkClass::kIntraNode).bandwidth);
  }
  const double ring = static_cast<double>(p - 1) * alpha +
                      static_cast<double>(p - 1) / static_cast<double>(p) * s_over_b;
  switch (kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return ring;
    case CollectiveKind::kAllReduce:
      return 2.0 * ring;
    case CollectiveKind::kBroadcast:
      return TreeDepth(static_cast<int>(p)) * alpha + s_over_b;
  }
  return 0.0;
}

AlphaBetaCostModel::Pricing AlphaBetaCostModel::Price(CollectiveKind kind,
                                                      const std::vector<DeviceId>& group,
                                                      int64_t bytes) const {
  const int64_t p = static_cast<int64_t>(group.size());
  if (p <= 1 || bytes <= 0) return {};
  const LinkClass link = SlowestRingClass(group);
  if (link == LinkClass::kSameDevice) return {};
  // Only a group spanning nodes can hold whole nodes; its ring then runs one channel per rail.
  const int64_t k = link == LinkClass::kInterNode ? WholeNodeMembers(group) : 0;
  const double ring = RingTime(kind, p, bytes, link, std::max<int64_t>(1, k));
  if (kind == CollectiveKind::kAllReduce && k > 0) {
    const double hierarchical = WholeNodesAllReduceTime(p / k, k, bytes);
    if (hierarchical < ring) return {hierarchical, k};
  }
  return {ring, 0};
}

double AlphaBetaCostModel::CollectiveTime(CollectiveKind kind, const std::vector<DeviceId>& group,
                                          int64_t bytes) const {
  return Price(kind, group, bytes).seconds;
}

LinkBytes AlphaBetaCostModel::CollectiveLinkBytes(CollectiveKind kind,
                                                  const std::vector<DeviceId>& group,
                                                  int64_t bytes) const {
  LinkBytes out;
  const int64_t p = static_cast<int64_t>(group.size());
  if (p <= 1 || bytes <= 0) return out;
  if (const int64_t k = Price(kind, group, bytes).hierarchical_members) {
    // Each device sends 2(k-1)/k S within its node; the nodes exchange 2(n-1) S in all (the
    // ring's and the trees' alike: every rail moves 2(n-1) S/k).
    const int64_t nodes = p / k;
    AddBytes(out, LinkClass::kIntraNode, 2 * nodes * (k - 1) * bytes);
    AddBytes(out, LinkClass::kInterNode, 2 * (nodes - 1) * bytes);
    return out;
  }
  switch (kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllReduce: {
      const int64_t factor = kind == CollectiveKind::kAllReduce ? 2 : 1;
      const int64_t per_hop = RoundDiv(factor * (p - 1) * bytes, p);
      for (int64_t i = 0; i < p; ++i) {
        AddBytes(out, Classify(group[i], group[(i + 1) % p]), per_hop);
      }
      break;
    }
    case CollectiveKind::kAllToAll:
      AllToAllLinkBytes(group, RoundDiv(bytes, p), out);
      break;
    case CollectiveKind::kBroadcast:
      for (int64_t i = 0; i + 1 < p; ++i) AddBytes(out, Classify(group[i], group[i + 1]), bytes);
      break;
  }
  return out;
}

void AlphaBetaCostModel::AllToAllLinkBytes(const std::vector<DeviceId>& group, int64_t per_pair,
                                           LinkBytes& out) const {
  // Every ordered pair of members exchanges per_pair bytes. Counted by node and device rather
  // than pair by pair, which a thousand-device group would make a million Classify calls.
  const int64_t p = static_cast<int64_t>(group.size());
  if (const NodeRuns runs = RunsOnNodes(group); runs.valid) {  // distinct devices, one type
    AddBytes(out, LinkClass::kIntraNode, (runs.square_sum - p) * per_pair);
    AddBytes(out, LinkClass::kInterNode, (p * p - runs.square_sum) * per_pair);
    return;
  }
  std::map<int64_t, int64_t> on_node;
  std::map<std::pair<int64_t, DeviceType>, int64_t> on_node_of_type;
  std::map<DeviceId, int64_t> on_device;
  for (const DeviceId& d : group) {
    const int64_t node = d.index / config_.devices_per_node;
    ++on_node[node];
    ++on_node_of_type[{node, d.type}];
    ++on_device[d];
  }
  const auto pairs_within = [](const auto& counts) {
    int64_t pairs = 0;
    for (const auto& entry : counts) pairs += entry.second * entry.second;
    return pairs;
  };
  const int64_t same_device = pairs_within(on_device) - p;  // i != j, one device listed twice
  const int64_t same_type = pairs_within(on_node_of_type) - p - same_device;
  const int64_t same_node = pairs_within(on_node) - p - same_device;
  AddBytes(out, LinkClass::kSameDevice, same_device * per_pair);
  AddBytes(out, LinkClass::kIntraNode, same_type * per_pair);
  AddBytes(out, LinkClass::kHostDevice, (same_node - same_type) * per_pair);
  AddBytes(out, LinkClass::kInterNode, (p * p - pairs_within(on_node)) * per_pair);
}

double AlphaBetaCostModel::ComputeTime(double flops, int64_t bytes, DType dtype) const {
  if (flops <= 0 && bytes <= 0) return 0.0;
  return config_.launch_overhead + std::max(flops / config_.peak_flops,
                                            static_cast<double>(bytes) / config_.memory_bandwidth);
}

double AlphaBetaCostModel::MessageTime(const DeviceId& src, const DeviceId& dst,
                                       int64_t bytes) const {
  if (bytes <= 0 || src == dst) return 0.0;
  const LinkParams& params = Link(Classify(src, dst));
  return params.latency + static_cast<double>(bytes) / params.bandwidth;
}

double AlphaBetaCostModel::InterNodeTime(int64_t count, int64_t bytes) const {
  if (count <= 0) return 0.0;
  const LinkParams& params = Link(LinkClass::kInterNode);
  return static_cast<double>(count) * params.latency +
         static_cast<double>(bytes) / params.bandwidth;
}

double AlphaBetaCostModel::FastestMessagesTime(int64_t count, int64_t bytes) const {
  if (count <= 0 || bytes <= 0) return 0.0;
  // Each message pays at least the least latency, and all bytes at best cross the widest link.
  return static_cast<double>(count) * fastest_.latency +
         static_cast<double>(bytes) / fastest_.bandwidth;
}

}  // namespace twinflow::sbp
