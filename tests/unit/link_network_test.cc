// The flow-level network against answers computed by hand: flows sharing a link split it
// equally, max-min fairness gives what one flow cannot use to the others, the double binary
// tree all-reduce takes its formula, and two all-reduces on the same devices at once take
// twice as long as one.
#include "simulator/network/link_network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/trace/trace_layout.h"
#include "simulator/collectives/algorithms.h"
#include "simulator/collectives/tree.h"
#include "simulator/des/event_queue.h"
#include "simulator/network/ports.h"
#include "simulator/sim_executor.h"
#include "tests/unit/hand_built_plan.h"

namespace twinflow::sim {
namespace {

using runtime::hand_plan::PlanBuilder;

// Starts each flow alone as a transfer and returns when each finished, in seconds.
std::vector<double> FinishTimes(const std::vector<double>& bandwidths,
                                const std::vector<FlowSpec>& flows) {
  EventQueue queue;
  LinkNetwork network(queue, bandwidths);
  std::vector<double> finish(flows.size(), -1);
  for (size_t i = 0; i < flows.size(); ++i) {
    network.Start({flows[i]}, 0, [&, i] { finish[i] = static_cast<double>(queue.now()) * 1e-9; });
  }
  while (queue.RunNext()) {
  }
  EXPECT_EQ(network.active_flows(), 0);
  return finish;
}

TEST(LinkNetwork, TwoEqualFlowsOnOneLinkTakeTwiceAsLong) {
  const double bytes = 64e6, bandwidth = 1e10;
  const std::vector<double> alone = FinishTimes({bandwidth}, {{{0}, bytes}});
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_NEAR(alone[0], bytes / bandwidth, 0.01 * bytes / bandwidth);
  const std::vector<double> two = FinishTimes({bandwidth}, {{{0}, bytes}, {{0}, bytes}});
  for (double t : two) EXPECT_NEAR(t, 2 * alone[0], 0.01 * alone[0]);
}

// A on L1, B on L1 and L2, C on L2; L1 moves 3 GB/s, L2 1 GB/s. Max-min: L2 is the
// bottleneck, B and C get 0.5 GB/s each and A the 2.5 GB/s B leaves on L1 (an equal split
// of L1 would give A only 1.5). B (1 MB) ends at 2 ms, A having sent 5 of its 10 MB and C 1
// of its 3 MB; then A has L1 alone (5 MB more at 3 GB/s: 3.667 ms) and C L2 (2 MB: 4 ms).
TEST(LinkNetwork, SharesLinksMaxMinFairly) {
  const std::vector<double> t = FinishTimes({3e9, 1e9}, {{{0}, 10e6}, {{0, 1}, 1e6}, {{1}, 3e6}});
  EXPECT_NEAR(t[0], 2e-3 + 5e6 / 3e9, 1e-8);
  EXPECT_NEAR(t[1], 2e-3, 1e-8);
  EXPECT_NEAR(t[2], 4e-3, 1e-8);
}

TEST(LinkNetwork, CountsBytesAndBusyTimePerLink) {
  EventQueue queue;
  LinkNetwork network(queue, {1e9, 1e9});
  network.Start({{{0, 1}, 1e6}}, 5000, [] {});  // 1 ms of data, then 5 us of latency
  while (queue.RunNext()) {
  }
  EXPECT_EQ(queue.now(), 1005000);
  EXPECT_DOUBLE_EQ(network.BytesCarried(1), 1e6);
  EXPECT_EQ(network.BusyTime(0), 1000000);
}

// 300 flows over 1 to 3 of 8 links, starting at random times: every flow ends, none faster
// than its slowest link alone allows, and no link carries more than its bandwidth allows.
TEST(LinkNetwork, RandomFlowsAllEndWithinTheLinksCapacity) {
  std::mt19937 random(7);
  const std::vector<double> bandwidths = {1e9, 2e9, 5e8, 1e9, 3e9, 1e9, 4e9, 2e9};
  EventQueue queue;
  LinkNetwork network(queue, bandwidths);
  struct Record {
    FlowSpec spec;
    Nanos start = 0, end = -1;
  };
  std::vector<Record> flows(300);
  for (size_t i = 0; i < flows.size(); ++i) {
    Record& r = flows[i];
    for (int k = 1 + static_cast<int>(random() % 3); k > 0; --k) {
      const int l = static_cast<int>(random() % bandwidths.size());
      if (std::find(r.spec.links.begin(), r.spec.links.end(), l) == r.spec.links.end()) {
        r.spec.links.push_back(l);
      }
    }
    r.spec.bytes = 1e3 + static_cast<double>(random() % 1000000);
    r.start = static_cast<Nanos>(random() % 50000000);
    queue.Schedule(r.start, [&, i] {
      network.Start({flows[i].spec}, 0, [&, i] { flows[i].end = queue.now(); });
    });
  }
  while (queue.RunNext()) {
  }
  std::vector<double> load(bandwidths.size(), 0);
  std::vector<Nanos> first(bandwidths.size(), queue.now()), last(bandwidths.size(), 0);
  for (const Record& r : flows) {
    ASSERT_GE(r.end, 0);
    double slowest = 1e30;
    for (int l : r.spec.links) {
      slowest = std::min(slowest, bandwidths[l]);
      load[l] += r.spec.bytes;
      first[l] = std::min(first[l], r.start);
      last[l] = std::max(last[l], r.end);
    }
    EXPECT_GE(static_cast<double>(r.end - r.start) + 1, r.spec.bytes / slowest * 1e9);
  }
  for (size_t l = 0; l < bandwidths.size(); ++l) {
    EXPECT_DOUBLE_EQ(network.BytesCarried(static_cast<int>(l)), load[l]);
    EXPECT_GE(static_cast<double>(last[l] - first[l]) + 1, load[l] / bandwidths[l] * 1e9 * 0.999);
    EXPECT_LE(network.BusyTime(static_cast<int>(l)), last[l] - first[l]);
  }
  EXPECT_EQ(network.active_flows(), 0);
}

TEST(DoubleBinaryTree, EveryRankHangsOffOneRootAtMostFourEdgesEach) {
  for (int n = 1; n <= 70; ++n) {
    const std::vector<int> parents = BinaryTreeParents(n);
    for (int q = 0; q < n; ++q) {
      int depth = 0;  // walk to the root within the tree's depth
      for (int at = q; parents[at] >= 0; at = parents[at]) ASSERT_LE(++depth, TreeDepth(n)) << n;
      EXPECT_EQ(parents[q] < 0, q == 0) << "n=" << n << " q=" << q;
    }
    EXPECT_EQ(DoubleBinaryTreeEdges(n).size(), 2u * (n - 1)) << n;
    EXPECT_LE(MaxTreeDegree(n), 4) << n;
  }
}

// MaxTreeDegree is a closed form (the search prices every all-reduce by it): it equals the
// degree counted on the trees' edges, up to 20,000 ranks (a 160,000-GPU cluster's nodes).
TEST(DoubleBinaryTree, MaxTreeDegreeIsTheMostEdgesCountedAtOneRank) {
  for (int n = 1; n <= 20000; n += n < 100 ? 1 : 97) {
    std::vector<int> degree(n, 0);
    for (const auto& [child, parent] : DoubleBinaryTreeEdges(n)) {
      ++degree[child];
      ++degree[parent];
    }
    EXPECT_EQ(MaxTreeDegree(n), *std::max_element(degree.begin(), degree.end())) << n;
  }
}

// Every one of p devices all-reduces `bytes` in each of `groups` groups over all of them.
plan::Plan AllReduces(int p, int64_t bytes, int groups) {
  const Shape shape{bytes / 4};
  PlanBuilder b(p);
  for (int d = 0; d < p; ++d) {
    const int64_t src = b.Task(plan::SOURCE, d, "x@" + std::to_string(d));
    std::vector<int64_t> collectives;
    for (int g = 0; g < groups; ++g) {
      const int64_t c = b.Task(plan::COLLECTIVE, d, "all_reduce" + std::to_string(g));
      b.task(c).mutable_collective()->set_kind(plan::ALL_REDUCE);
      b.task(c).mutable_collective()->set_reduce_op(plan::REDUCE_SUM);
      b.task(c).mutable_collective()->set_group(g);
      b.task(c).mutable_collective()->set_member(d);
      b.Regst(c, {b.Task(plan::SINK, d, "sink" + std::to_string(g))}, shape);
      collectives.push_back(c);
    }
    b.Regst(src, collectives, shape);
  }
  plan::Plan plan = b.Build();
  for (int g = 0; g < groups; ++g) {
    plan::CommGroup* group = plan.add_groups();
    for (int d = 0; d < p; ++d) group->add_devices(d);
  }
  return plan;
}

Topology Cluster(int nodes, int per_node, double intra_bandwidth, double inter_bandwidth) {
  return Topology(ParseClusterSpec(
      "name: 'flows' nodes: " + std::to_string(nodes) +
          " devices_per_node: " + std::to_string(per_node) +
          " device { name: 'd' peak_flops: 1e12 memory_bandwidth: 1e18 memory_bytes: 1000000000"
          " launch_overhead_s: 0 flops_efficiency: 1 memory_efficiency: 1 }"
          " intra_node { bandwidth: " +
          std::to_string(intra_bandwidth) +
          " latency_s: 1e-6 efficiency: 1 }"
          " inter_node { bandwidth: " +
          std::to_string(inter_bandwidth) + " latency_s: 5e-6 efficiency: 1 }",
      "flow cluster"));
}

// 8 nodes of one device, 1 MiB: the tree (2 log2(8) = 6 steps, the busiest rank moving
// 4 x S/2 = 2S) beats the ring (14 steps, 7/4 S).
TEST(Simulator, DoubleBinaryTreeAllReduceMatchesItsFormula) {
  const int n = 8;
  const int64_t bytes = int64_t{1} << 20;
  const double a = 5e-6, bandwidth = 40e9, s = static_cast<double>(bytes);
  const SimResult r = Simulate(AllReduces(n, bytes, 1), Cluster(n, 1, 400e9, bandwidth), {});
  ASSERT_TRUE(r.finished) << r.deadlock_report;
  const double tree = 2 * 3 * a + 2 * s / bandwidth;
  const double ring = 2 * (n - 1) * a + 2.0 * (n - 1) / n * s / bandwidth;
  ASSERT_LT(tree, ring);
  EXPECT_NEAR(r.total_s, tree, 0.01 * tree);
  Link link;
  link.set_bandwidth(bandwidth);
  link.set_latency_s(a);
  link.set_efficiency(1);
  EXPECT_NEAR(TreeAllReduceSeconds(n, bytes, link), tree, 1e-12);
  double most = 0;
  for (const DeviceReport& d : r.devices) most = std::max(most, d.inter_bytes);
  EXPECT_DOUBLE_EQ(most, 2 * s);  // the busiest rank: inner in one tree, a leaf in the other
}

// A reduce-scatter over 2 nodes of 4 devices runs on 4 channels, each leaving a node through a
// different NIC: every NIC carries a quarter of the ring's inter-node bytes, and the time is
// that of one NIC moving S (p-1)/p / 4, not all of it through one NIC per node.
TEST(Collectives, RingChannelsSpreadTheInterNodeHopsOverEveryNic) {
  const Topology topology = Cluster(2, 4, 400e9, 25e9);
  const std::vector<int> devices = {0, 1, 2, 3, 4, 5, 6, 7};
  const int64_t bytes = int64_t{1} << 30;
  const CollectivePlan plan =
      PlanCollective(CollectiveKind::kReduceScatter, devices, bytes, topology);
  ASSERT_EQ(plan.phases.size(), 1u);
  std::map<int, double> load;
  for (const FlowSpec& f : plan.phases[0].flows) {
    for (int l : f.links) load[l] += f.bytes;
  }
  const double ring = 7.0 / 8.0 * static_cast<double>(bytes);  // (p-1)/p S per ring link
  for (int d : devices) {
    EXPECT_DOUBLE_EQ(load[LinkId(d, Port::kNicOut)], ring / 4) << "device " << d;
    EXPECT_DOUBLE_EQ(load[LinkId(d, Port::kIntraOut)], ring * 3 / 4) << "device " << d;
  }
  EXPECT_NEAR(plan.idle_s, 7 * 5e-6 + ring / 4 / 25e9, 1e-9);

  // Two NICs per node, each shared by two devices: the same channels, two through each NIC.
  ClusterSpec shared = topology.spec();
  shared.set_nics_per_node(2);
  const Topology two_nics(shared);
  const CollectivePlan fewer =
      PlanCollective(CollectiveKind::kReduceScatter, devices, bytes, two_nics);
  std::map<int, double> nic_load;
  for (const FlowSpec& f : fewer.phases[0].flows) {
    for (int l : f.links) nic_load[l] += IsNicLink(l) ? f.bytes : 0;
  }
  for (int d : devices) {
    EXPECT_DOUBLE_EQ(nic_load[LinkId(d, Port::kNicOut)], d % 2 == 0 ? ring / 2 : 0) << d;
  }
  EXPECT_NEAR(fewer.idle_s, 7 * 5e-6 + ring / 2 / 25e9, 1e-9);
  shared.set_nics_per_node(3);
  EXPECT_THROW(ValidateClusterSpec(shared), InvalidArgumentError);
}

// Two all-reduces over the same 4 devices at once share every ring link: each takes twice the
// bandwidth time of one alone. The trace's link counters show the links full, then idle.
TEST(Simulator, TwoConcurrentAllReducesTakeTwiceAsLong) {
  const int p = 4;
  const int64_t bytes = int64_t{64} << 20;
  const Topology cluster = Cluster(1, p, 100e9, 1e9);
  const SimResult one = Simulate(AllReduces(p, bytes, 1), cluster, {});
  SimOptions traced;
  traced.trace = true;
  const plan::Plan both = AllReduces(p, bytes, 2);
  const SimResult two = Simulate(both, cluster, traced);
  ASSERT_TRUE(one.finished && two.finished);
  const double latency = 2 * (p - 1) * 1e-6;
  const double transfer = 2.0 * (p - 1) / p * static_cast<double>(bytes) / 100e9;
  EXPECT_NEAR(one.total_s, latency + transfer, 0.01 * (latency + transfer));
  EXPECT_NEAR(two.total_s, latency + 2 * transfer, 0.01 * (latency + 2 * transfer));
  EXPECT_NEAR(two.total_s / one.total_s, 2.0, 0.02);
  EXPECT_DOUBLE_EQ(two.devices[0].intra_bytes, 2 * one.devices[0].intra_bytes);
  EXPECT_NEAR(two.devices[0].intra_busy_s, 2 * transfer, 0.01 * transfer);
  // The trace: each link a track of its own, busy at full load while both all-reduces share
  // it, and a load counter going from full to idle; the two concurrent all-reduces on two
  // communication tracks of their device.
  const trace::TraceLayout layout = trace::LayOut(both, two.trace, {});
  std::map<std::string, int> tracks;
  for (const trace::TraceTrack& t : layout.tracks) {
    if (t.process == 0) ++tracks[t.name];
  }
  EXPECT_EQ(tracks["intra out"], 1);
  EXPECT_EQ(tracks["communication 2"], 1);
  bool full_link = false;
  for (const trace::TraceSlice& s : layout.slices) {
    full_link |= s.task < 0 && layout.SliceName(s) == "intra out 100%";
  }
  EXPECT_TRUE(full_link);
  std::map<double, int> loads;
  for (const trace::CounterPoint& point : layout.points) {
    if (layout.counters[static_cast<size_t>(point.counter)].name == "intra out")
      ++loads[point.value];
  }
  EXPECT_GT(loads[1.0], 0);
  EXPECT_GT(loads[0.0], 0);
}

}  // namespace
}  // namespace twinflow::sim
