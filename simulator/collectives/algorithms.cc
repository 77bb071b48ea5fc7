#include "simulator/collectives/algorithms.h"

#include <algorithm>
#include <map>

#include "engine/core/error.h"
#include "simulator/collectives/tree.h"
#include "simulator/network/ports.h"

namespace twinflow::sim {
namespace {

double Latency(const Topology& topology, bool spans) {
  return spans ? topology.spec().inter_node().latency_s()
               : topology.spec().intra_node().latency_s();
}

// `bytes` along `ring` (closed: the last sends to the first too); `steps` latencies.
CollectivePhase RingPhase(const Topology& topology, const std::vector<int>& ring, double bytes,
                          bool closed, int steps) {
  CollectivePhase phase;
  bool spans = false;
  const size_t p = ring.size();
  for (size_t i = 0; i < p && p > 1; ++i) {
    if (!closed && i + 1 == p) break;
    const int from = ring[i], to = ring[(i + 1) % p];
    spans |= topology.NodeOf(from) != topology.NodeOf(to);
    phase.flows.push_back({PathLinks(topology, from, to), bytes});
  }
  phase.latency_s = steps * Latency(topology, spans);
  return phase;
}

// The members of sorted `ring` by node when it spans two or more nodes with equally many
// members on each, else nothing: the groups rails and hierarchical algorithms work over.
std::vector<std::vector<int>> WholeNodes(const Topology& topology, const std::vector<int>& ring) {
  std::vector<std::vector<int>> nodes;  // ring is sorted: each node's members are contiguous
  for (size_t i = 0; i < ring.size(); ++i) {
    if (i == 0 || topology.NodeOf(ring[i]) != topology.NodeOf(ring[i - 1])) nodes.emplace_back();
    nodes.back().push_back(ring[i]);
  }
  const size_t k = nodes.empty() ? 0 : nodes.front().size();
  const bool whole = std::all_of(nodes.begin(), nodes.end(),
                                 [k](const std::vector<int>& m) { return m.size() == k; });
  if (nodes.size() < 2 || !whole) return {};
  return nodes;
}

// The rings NCCL runs a ring collective on (its channels): one when the ring stays in a node,
// or when its nodes hold unequal numbers of members; else one per member of a node, channel c
// visiting each node's members rotated by c, so that it leaves every node through a different
// device and NIC (DGX nodes have a NIC per GPU on its own rail) and the inter-node hops of the
// collective spread over all of them instead of one NIC per node.
std::vector<std::vector<int>> Channels(const Topology& topology, const std::vector<int>& ring) {
  const std::vector<std::vector<int>> nodes = WholeNodes(topology, ring);
  const size_t k = nodes.empty() ? 0 : nodes.front().size();
  if (k < 2) return {ring};
  std::vector<std::vector<int>> channels(k);
  for (size_t c = 0; c < k; ++c) {
    for (const std::vector<int>& node : nodes) {
      for (size_t i = 0; i < k; ++i) channels[c].push_back(node[(i + c) % k]);
    }
  }
  return channels;
}

// `bytes` along `ring` as RingPhase does, split evenly over its channels (Channels).
CollectivePhase ChannelPhase(const Topology& topology, const std::vector<int>& ring, double bytes,
                             bool closed, int steps) {
  const std::vector<std::vector<int>> channels = Channels(topology, ring);
  CollectivePhase phase;
  for (const std::vector<int>& channel : channels) {
    CollectivePhase one =
        RingPhase(topology, channel, bytes / static_cast<double>(channels.size()), closed, steps);
    phase.flows.insert(phase.flows.end(), one.flows.begin(), one.flows.end());
    phase.latency_s = std::max(phase.latency_s, one.latency_s);
  }
  return phase;
}

// Appends `phase`'s flows to `into` (phases of independent rails or nodes run together).
void Merge(CollectivePhase& into, CollectivePhase phase) {
  into.flows.insert(into.flows.end(), std::make_move_iterator(phase.flows.begin()),
                    std::make_move_iterator(phase.flows.end()));
  into.latency_s = std::max(into.latency_s, phase.latency_s);
}

CollectivePlan Finish(std::string name, std::vector<CollectivePhase> phases,
                      const Topology& topology) {
  CollectivePlan plan{std::move(name), std::move(phases), 0};
  plan.idle_s = IdleSeconds(plan.phases, topology);
  return plan;
}

// all_to_all: each member sends (p - 1) / p of its buffer, split over its node's links and its
// NIC by where the other members are.
CollectivePlan AllToAllPlan(const std::vector<int>& ring, double s, const Topology& topology) {
  const int p = static_cast<int>(ring.size());
  CollectivePhase phase;
  bool spans = false;
  for (int d : ring) {
    int local = 0;  // members on d's node, d included
    for (int e : ring) local += topology.NodeOf(e) == topology.NodeOf(d);
    spans |= local < p;
    const double intra = static_cast<double>(local - 1) / p * s;
    const double inter = static_cast<double>(p - local) / p * s;
    if (intra > 0)
      phase.flows.push_back({{LinkId(d, Port::kIntraOut), LinkId(d, Port::kIntraIn)}, intra});
    if (inter > 0)
      phase.flows.push_back(
          {{NicLink(topology, d, Port::kNicOut), NicLink(topology, d, Port::kNicIn)}, inter});
  }
  phase.latency_s = (p - 1) * Latency(topology, spans);
  return Finish("ring", {std::move(phase)}, topology);
}

// The simulator's one switch on the collective kind.
CollectivePlan RingPlan(CollectiveKind kind, const std::vector<int>& ring, double s,
                        const Topology& topology) {
  const int p = static_cast<int>(ring.size());
  const double share = static_cast<double>(p - 1) / p;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return Finish("ring",
                    {ChannelPhase(topology, ring, 2.0 * (p - 1) / p * s, true, 2 * (p - 1))},
                    topology);
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllGather:
      return Finish("ring", {ChannelPhase(topology, ring, share * s, true, p - 1)}, topology);
    case CollectiveKind::kBroadcast:
      return Finish("ring", {ChannelPhase(topology, ring, s, false, p - 1)}, topology);
    case CollectiveKind::kAllToAll:
      break;
  }
  return AllToAllPlan(ring, s, topology);
}

// The all-reduce over whole nodes (`nodes`: each node's members, sorted, equally many):
// reduce-scatter inside, all-reduce of S/k per rail between nodes (ring or tree), all-gather.
CollectivePlan HierarchicalPlan(const std::vector<std::vector<int>>& nodes, double s, bool tree,
                                const Topology& topology) {
  const int n = static_cast<int>(nodes.size());
  const int k = static_cast<int>(nodes.front().size());
  const double shard = s / k;
  CollectivePhase inside, between;
  const std::vector<std::pair<int, int>> edges =
      tree ? DoubleBinaryTreeEdges(n) : std::vector<std::pair<int, int>>{};
  for (const std::vector<int>& node : nodes) {
    Merge(inside, RingPhase(topology, node, static_cast<double>(k - 1) / k * s, true, k - 1));
  }
  for (int r = 0; r < k; ++r) {
    std::vector<int> rail;
    for (const std::vector<int>& node : nodes) rail.push_back(node[r]);
    if (!tree) {
      Merge(between, RingPhase(topology, rail, 2.0 * (n - 1) / n * shard, true, 2 * (n - 1)));
      continue;
    }
    for (const auto& [child, parent] : edges) {  // half the data per tree
      between.flows.push_back({PathLinks(topology, rail[child], rail[parent]), shard / 2});
      between.flows.push_back({PathLinks(topology, rail[parent], rail[child]), shard / 2});
    }
    between.latency_s = 2 * TreeDepth(n) * Latency(topology, true);
  }
  if (k == 1) return Finish(tree ? "tree" : "ring", {std::move(between)}, topology);
  return Finish(tree ? "hierarchical tree" : "hierarchical", {inside, std::move(between), inside},
                topology);
}

}  // namespace

double IdleSeconds(const std::vector<CollectivePhase>& phases, const Topology& topology) {
  const std::vector<double> bandwidth = {
      topology.spec().intra_node().bandwidth() * topology.spec().intra_node().efficiency(),
      topology.spec().inter_node().bandwidth() * topology.spec().inter_node().efficiency()};
  double seconds = 0;
  for (const CollectivePhase& phase : phases) {
    std::map<int, double> load;  // link -> bytes
    for (const FlowSpec& f : phase.flows) {
      for (int l : f.links) load[l] += f.bytes;
    }
    double slowest = 0;
    for (const auto& [link, bytes] : load) {
      slowest = std::max(slowest, bytes / bandwidth[IsNicLink(link) ? 1 : 0]);
    }
    seconds += phase.latency_s + slowest;
  }
  return seconds;
}

CollectivePlan PlanCollective(CollectiveKind kind, const std::vector<int>& devices, int64_t bytes,
                              const Topology& topology) {
  if (devices.size() <= 1 || bytes <= 0) return {};
  std::vector<int> ring = devices;
  std::sort(ring.begin(), ring.end());
  const double s = static_cast<double>(bytes);
  CollectivePlan best = RingPlan(kind, ring, s, topology);
  if (kind != CollectiveKind::kAllReduce) return best;
  const std::vector<std::vector<int>> nodes = WholeNodes(topology, ring);
  if (nodes.empty()) return best;
  const size_t k = nodes.front().size();
  for (const bool tree : {false, true}) {
    if (!tree && k == 1) continue;  // the plain ring already
    CollectivePlan candidate = HierarchicalPlan(nodes, s, tree, topology);
    if (candidate.idle_s < best.idle_s) best = std::move(candidate);
  }
  return best;
}

CollectivePlan ReplicaAllReducePlan(int device, int replicas, int64_t bytes,
                                    const Topology& topology) {
  if (replicas <= 1 || bytes <= 0) return {};
  const std::vector<int> nic = {NicLink(topology, device, Port::kNicOut),
                                NicLink(topology, device, Port::kNicIn)};
  const double s = static_cast<double>(bytes);
  const double a = topology.spec().inter_node().latency_s();
  CollectivePlan best = Finish(
      "ring", {{{{nic, 2.0 * (replicas - 1) / replicas * s}}, 2 * (replicas - 1) * a}}, topology);
  CollectivePlan tree = Finish(
      "tree", {{{{nic, MaxTreeDegree(replicas) * s / 2}}, 2 * TreeDepth(replicas) * a}}, topology);
  return tree.idle_s < best.idle_s ? tree : best;
}

}  // namespace twinflow::sim
