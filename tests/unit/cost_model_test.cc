#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/sbp/alpha_beta_cost_model.h"

namespace twinflow::sbp {
namespace {

DeviceId Cpu(int64_t i) { return {DeviceType::kCpu, i}; }
DeviceId Cuda(int64_t i) { return {DeviceType::kCuda, i}; }

// Round numbers so the expected values are easy to check by hand.
AlphaBetaConfig TestConfig() {
  AlphaBetaConfig config;
  config.devices_per_node = 4;
  config.links = {{LinkClass::kIntraNode, {100e9, 1e-6}},
                  {LinkClass::kInterNode, {10e9, 10e-6}},
                  {LinkClass::kHostDevice, {20e9, 5e-6}}};
  return config;
}

TEST(CostModel, Names) {
  EXPECT_STREQ(LinkClassName(LinkClass::kSameDevice), "local");
  EXPECT_STREQ(LinkClassName(LinkClass::kIntraNode), "intra-node");
  EXPECT_STREQ(LinkClassName(LinkClass::kInterNode), "inter-node");
  EXPECT_STREQ(LinkClassName(LinkClass::kHostDevice), "host-device");
  EXPECT_STREQ(CollectiveKindName(CollectiveKind::kAllGather), "all_gather");
  EXPECT_STREQ(CollectiveKindName(CollectiveKind::kAllReduce), "all_reduce");
  EXPECT_STREQ(CollectiveKindName(CollectiveKind::kReduceScatter), "reduce_scatter");
  EXPECT_STREQ(CollectiveKindName(CollectiveKind::kAllToAll), "all_to_all");
  EXPECT_STREQ(CollectiveKindName(CollectiveKind::kBroadcast), "broadcast");
}

TEST(CostModel, ClassifiesDevices) {
  const AlphaBetaCostModel model(TestConfig());
  EXPECT_EQ(model.Classify(Cpu(1), Cpu(1)), LinkClass::kSameDevice);
  EXPECT_EQ(model.Classify(Cpu(0), Cpu(3)), LinkClass::kIntraNode);
  EXPECT_EQ(model.Classify(Cuda(4), Cuda(7)), LinkClass::kIntraNode);
  EXPECT_EQ(model.Classify(Cpu(3), Cpu(4)), LinkClass::kInterNode);
  EXPECT_EQ(model.Classify(Cuda(1), Cpu(2)), LinkClass::kHostDevice);
  EXPECT_EQ(model.Classify(Cuda(1), Cpu(1)), LinkClass::kHostDevice);
  EXPECT_EQ(model.Classify(Cuda(1), Cpu(5)), LinkClass::kInterNode);
}

TEST(CostModel, RingOfFourIntraNodeDevices) {
  const AlphaBetaCostModel model(TestConfig());
  const std::vector<DeviceId> ring = {Cpu(0), Cpu(1), Cpu(2), Cpu(3)};
  const int64_t s = 4'000'000;
  const double alpha = 1e-6, b = 100e9;
  const double one = 3 * alpha + 0.75 * s / b;
  EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kAllGather, ring, s), one);
  EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kReduceScatter, ring, s), one);
  EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kAllToAll, ring, s), one);
  EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kAllReduce, ring, s), 2 * one);
  EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kBroadcast, ring, s), 2 * alpha + s / b);
  // ceil(log2 3) = 2, ceil(log2 5) = 3.
  const std::vector<DeviceId> three = {Cpu(0), Cpu(1), Cpu(2)};
  EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kBroadcast, three, s), 2 * alpha + s / b);
  const std::vector<DeviceId> two = {Cpu(0), Cpu(1)};
  EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kBroadcast, two, s), alpha + s / b);
}

TEST(CostModel, MixedGroupUsesTheSlowestLink) {
  const AlphaBetaCostModel model(TestConfig());
  const std::vector<DeviceId> group = {Cpu(2), Cpu(3), Cpu(4), Cpu(5)};
  EXPECT_EQ(model.SlowestRingClass(group), LinkClass::kInterNode);
  const int64_t s = 1'000'000;
  // Two devices on each of two nodes: the ring runs on two channels, one per NIC, so each NIC
  // carries half of it (the fabric ports the other half, at 10x the bandwidth).
  EXPECT_EQ(model.RingRails(group), 2);
  EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kAllGather, group, s),
                   3 * 10e-6 + 0.75 * s / 10e9 / 2);
  // One device on one node and two on the other: one ring, all through one NIC.
  const std::vector<DeviceId> uneven = {Cpu(3), Cpu(4), Cpu(5)};
  EXPECT_EQ(model.RingRails(uneven), 1);
  EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kAllGather, uneven, s),
                   2 * 10e-6 + 2.0 / 3.0 * s / 10e9);
  EXPECT_EQ(model.SlowestRingClass({Cuda(0), Cpu(1)}), LinkClass::kHostDevice);
  EXPECT_EQ(model.SlowestRingClass({Cpu(0), Cpu(1)}), LinkClass::kIntraNode);
  EXPECT_EQ(model.SlowestRingClass({Cpu(0)}), LinkClass::kSameDevice);
}

// An all-reduce over whole nodes is priced as the simulator runs it (simulator/collectives/
// algorithms.h): the fastest of the ring and the hierarchical algorithms, whose step between
// the nodes is a ring or a double binary tree.
TEST(CostModel, AllReduceOverWholeNodesTakesTheFastestAlgorithm) {
  const AlphaBetaCostModel model(TestConfig());
  const double ai = 1e-6, bi = 100e9, ae = 10e-6, be = 10e9;
  std::vector<DeviceId> rails;  // 4 devices on each of 16 nodes
  for (int64_t d = 0; d < 64; ++d) rails.push_back(Cpu(d));
  for (const int64_t s : {int64_t{4'000}, int64_t{4'000'000'000}}) {
    const double inside = 2 * (3 * ai + 0.75 * s / bi);
    const double ring_between = 2 * 15 * ae + 2.0 * 15 / 16 * (s / 4.0) / be;
    const double tree_between = 2 * 4 * ae + 4 * (s / 4.0) / 2 / be;
    // The plain ring on 4 channels: each NIC carries a quarter, each fabric port the rest.
    const double ring = 2 * (63 * ae + 63.0 / 64 * std::max(s / 4.0 / be, 0.75 * s / bi));
    EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kAllReduce, rails, s),
                     std::min(ring, inside + std::min(ring_between, tree_between)))
        << s;
  }
  // Small: the tree's 8 latencies between the nodes beat the ring's 126.
  EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kAllReduce, rails, 4'000),
                   2 * (3 * ai + 0.75 * 4'000 / bi) + 2 * 4 * ae + 4 * 1'000.0 / 2 / be);
  // One device on each of 16 nodes: the plain double binary tree.
  std::vector<DeviceId> one_each;
  for (int64_t n = 0; n < 16; ++n) one_each.push_back(Cpu(4 * n));
  EXPECT_DOUBLE_EQ(model.CollectiveTime(CollectiveKind::kAllReduce, one_each, 4'000),
                   2 * 4 * ae + 4 * 4'000.0 / 2 / be);
  // Within a node, and over unequal nodes, the ring alone.
  EXPECT_DOUBLE_EQ(
      model.CollectiveTime(CollectiveKind::kAllReduce, {Cpu(0), Cpu(1), Cpu(2)}, 3'000),
      2 * (2 * ai + 2.0 / 3 * 3'000 / bi));
  EXPECT_DOUBLE_EQ(
      model.CollectiveTime(CollectiveKind::kAllReduce, {Cpu(3), Cpu(4), Cpu(5)}, 3'000),
      2 * (2 * ae + 2.0 / 3 * 3'000 / be));
}

TEST(CostModel, SlowestRingClassBreaksBandwidthTiesByLatency) {
  AlphaBetaConfig config = TestConfig();
  config.links[LinkClass::kHostDevice] = {10e9, 20e-6};  // as slow as inter-node, more latency
  const AlphaBetaCostModel model(config);
  EXPECT_EQ(model.SlowestRingClass({Cpu(3), Cpu(4), Cuda(4)}), LinkClass::kHostDevice);
}

TEST(CostModel, NothingToMoveCostsNothing) {
  const AlphaBetaCostModel model(TestConfig());
  for (CollectiveKind kind :
       {CollectiveKind::kAllGather, CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter,
        CollectiveKind::kAllToAll, CollectiveKind::kBroadcast}) {
    EXPECT_EQ(model.CollectiveTime(kind, {Cpu(0), Cpu(1)}, 0), 0.0);
    EXPECT_EQ(model.CollectiveTime(kind, {Cpu(0)}, 1000), 0.0);
    EXPECT_EQ(model.CollectiveTime(kind, {}, 1000), 0.0);
    EXPECT_TRUE(model.CollectiveLinkBytes(kind, {Cpu(0), Cpu(1)}, 0).empty());
    EXPECT_TRUE(model.CollectiveLinkBytes(kind, {Cpu(0)}, 1000).empty());
  }
  EXPECT_EQ(model.TransferTime({}), 0.0);
  EXPECT_EQ(model.TransferTime({{Cpu(0), Cpu(0), 1000}, {Cpu(1), Cpu(2), 0}}), 0.0);
}

TEST(CostModel, CollectiveLinkBytes) {
  const AlphaBetaCostModel model(TestConfig());
  // Ring 2 -> 3 -> 4 -> 5 -> 2: hops 2-3 and 4-5 intra-node, 3-4 and 5-2 inter-node.
  const std::vector<DeviceId> group = {Cpu(2), Cpu(3), Cpu(4), Cpu(5)};
  LinkBytes ag = model.CollectiveLinkBytes(CollectiveKind::kAllGather, group, 1001);
  EXPECT_EQ(ag, (LinkBytes{{LinkClass::kIntraNode, 2 * 751}, {LinkClass::kInterNode, 2 * 751}}));
  EXPECT_EQ(model.CollectiveLinkBytes(CollectiveKind::kReduceScatter, group, 1001), ag);
  // A small all-reduce over these whole nodes goes hierarchical: each device sends 2(k-1)/k S
  // in its node (4 x 1000), the rails 2(n-1)/n S/k each between the nodes (4 x 500).
  EXPECT_EQ(model.CollectiveLinkBytes(CollectiveKind::kAllReduce, group, 1000),
            (LinkBytes{{LinkClass::kIntraNode, 4000}, {LinkClass::kInterNode, 2000}}));
  // Unequal nodes run the ring: 3 -> 4 inter, 4 -> 5 intra, 5 -> 3 inter, 4/3 S each.
  EXPECT_EQ(model.CollectiveLinkBytes(CollectiveKind::kAllReduce, {Cpu(3), Cpu(4), Cpu(5)}, 900),
            (LinkBytes{{LinkClass::kIntraNode, 1200}, {LinkClass::kInterNode, 2 * 1200}}));
  // Pairwise: 2<->3 and 4<->5 intra (4 ordered pairs), the other 8 ordered pairs inter.
  EXPECT_EQ(model.CollectiveLinkBytes(CollectiveKind::kAllToAll, group, 1000),
            (LinkBytes{{LinkClass::kIntraNode, 4 * 250}, {LinkClass::kInterNode, 8 * 250}}));
  // Chain 2 -> 3 -> 4 -> 5.
  EXPECT_EQ(model.CollectiveLinkBytes(CollectiveKind::kBroadcast, group, 1000),
            (LinkBytes{{LinkClass::kIntraNode, 2000}, {LinkClass::kInterNode, 1000}}));
  // One node only: no inter-node entry at all.
  const LinkBytes intra =
      model.CollectiveLinkBytes(CollectiveKind::kAllGather, {Cpu(0), Cpu(1)}, 100);
  EXPECT_EQ(intra, (LinkBytes{{LinkClass::kIntraNode, 100}}));
}

TEST(CostModel, TransferTimeSerialisesPerDevice) {
  const AlphaBetaCostModel model(TestConfig());
  const double intra = 1e-6 + 1e6 / 100e9, inter = 10e-6 + 1e6 / 10e9;
  // Distinct pairs run concurrently.
  EXPECT_DOUBLE_EQ(model.TransferTime({{Cpu(0), Cpu(1), 1'000'000}, {Cpu(2), Cpu(3), 1'000'000}}),
                   intra);
  // cpu:0 sends twice: its sends add up.
  EXPECT_DOUBLE_EQ(model.TransferTime({{Cpu(0), Cpu(1), 1'000'000}, {Cpu(0), Cpu(2), 1'000'000}}),
                   2 * intra);
  // cpu:5 receives once over each class; same-device and empty transfers are free.
  EXPECT_DOUBLE_EQ(model.TransferTime({{Cpu(4), Cpu(5), 1'000'000},
                                       {Cpu(0), Cpu(5), 1'000'000},
                                       {Cpu(5), Cpu(5), 1'000'000},
                                       {Cpu(1), Cpu(5), 0}}),
                   intra + inter);
}

TEST(CostModel, TransferLinkBytesByClass) {
  const AlphaBetaCostModel model(TestConfig());
  const LinkBytes bytes = model.TransferLinkBytes({{Cpu(0), Cpu(1), 10},
                                                   {Cpu(0), Cpu(4), 20},
                                                   {Cpu(1), Cpu(1), 40},
                                                   {Cpu(2), Cuda(2), 80},
                                                   {Cpu(3), Cpu(7), 0},
                                                   {Cpu(2), Cpu(3), 5}});
  EXPECT_EQ(bytes, (LinkBytes{{LinkClass::kIntraNode, 15},
                              {LinkClass::kInterNode, 20},
                              {LinkClass::kHostDevice, 80}}));
}

TEST(CostModel, DefaultsAreSane) {
  const AlphaBetaCostModel model;
  EXPECT_EQ(model.config().devices_per_node, 8);
  EXPECT_EQ(model.Classify(Cuda(7), Cuda(8)), LinkClass::kInterNode);
  EXPECT_GT(model.Link(LinkClass::kIntraNode).bandwidth,
            model.Link(LinkClass::kInterNode).bandwidth);
}

TEST(CostModel, RejectsBadConfig) {
  AlphaBetaConfig config = TestConfig();
  config.devices_per_node = 0;
  EXPECT_THROW(AlphaBetaCostModel{config}, InvalidArgumentError);
  config = TestConfig();
  config.links[LinkClass::kInterNode].bandwidth = 0;
  EXPECT_THROW(AlphaBetaCostModel{config}, InvalidArgumentError);
  config = TestConfig();
  config.links[LinkClass::kIntraNode].bandwidth = -1;
  EXPECT_THROW(AlphaBetaCostModel{config}, InvalidArgumentError);
  config = TestConfig();
  config.links[LinkClass::kHostDevice].latency = -1e-6;
  EXPECT_THROW(AlphaBetaCostModel{config}, InvalidArgumentError);
  config = TestConfig();
  config.links.erase(LinkClass::kHostDevice);
  try {
    AlphaBetaCostModel model(config);
    FAIL() << "expected InvalidArgumentError";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("host-device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace twinflow::sbp
