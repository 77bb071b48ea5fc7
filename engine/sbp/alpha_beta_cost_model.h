#pragma once
// AlphaBetaCostModel: every message costs alpha (latency) plus bytes / beta (bandwidth) of the
// slowest link class it crosses. Collectives use the ring formulas, an all-reduce over whole
// nodes the hierarchical ones where faster (WholeNodesAllReduceTime):
//   all_reduce                              2(p-1) alpha + 2(p-1)/p * S / B
//   reduce_scatter, all_gather, all_to_all   (p-1) alpha +  (p-1)/p * S / B
//   broadcast (pipelined tree)        ceil(log2 p) alpha +          S / B
// Point-to-point transfers run concurrently; each device serialises its own sends and its own
// receives, so a transfer set takes max over devices of max(sum out, sum in) of alpha + b / B.
// Compute is a roofline: launch overhead plus the larger of flops / peak and bytes / memory
// bandwidth. Devices are grouped into nodes of `devices_per_node` consecutive ids; cpu and cuda
// devices of one node talk over the host-device link.
#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "engine/sbp/cost_model.h"

namespace twinflow::sbp {

struct LinkParams {
  double bandwidth = 1e9;  // bytes per second
  double latency = 1e-6;   // seconds per message
};

struct AlphaBetaConfig {
  int64_t devices_per_node = 8;
  std::map<LinkClass, LinkParams> links = {
      {LinkClass::kIntraNode, {150e9, 2e-6}},  // NVLink-class fabric inside a node
      {LinkClass::kInterNode, {25e9, 8e-6}},   // one 200 Gb/s NIC per device
      {LinkClass::kHostDevice, {25e9, 5e-6}},  // PCIe 4 x16
  };
  // Compute, as a roofline: launch overhead + max(flops / peak, bytes / memory bandwidth).
  double peak_flops = 100e12;      // dense fp32-class math of a current accelerator
  double memory_bandwidth = 2e12;  // bytes per second
  double launch_overhead = 5e-6;   // seconds per kernel
};

// Named configurations: "accelerator" (the defaults above: an NVLink GPU node with one NIC per
// GPU) and "cpu-host" (CPU cores of one machine as devices: one core's sgemm rate and memory
// bandwidth, in-process copies as the intra-node link). Simulator presets calibrated per host
// come later; these keep the SBP search's choices sensible for what runs today.
// InvalidArgumentError naming the preset when it is unknown.
AlphaBetaConfig AlphaBetaPreset(const std::string& name);

class AlphaBetaCostModel : public CostModel {
 public:
  explicit AlphaBetaCostModel(AlphaBetaConfig config = {});

  const AlphaBetaConfig& config() const { return config_; }
  const LinkParams& Link(LinkClass link) const;
  // The slowest class on the ring group[0] -> group[1] -> ... -> group[0].
  LinkClass SlowestRingClass(const std::vector<DeviceId>& group) const;
  // The NICs a ring over `group` leaves each node through: k when the group is k > 1 devices
  // on each of two or more nodes (NCCL's channels, one per rail: simulator/collectives/
  // algorithms.h), else 1.
  int64_t RingRails(const std::vector<DeviceId>& group) const;
  // k when `group` is k devices on each of two or more nodes (whole nodes, as the simulator's
  // hierarchical algorithms need), else 0.
  int64_t WholeNodeMembers(const std::vector<DeviceId>& group) const;
  // The hierarchical all-reduce over `nodes` nodes of k members: a ring reduce-scatter in each
  // node, the all-reduce of S/k per rail between the nodes by a ring or NCCL's double binary
  // tree (the faster; k = 1: the tree alone), a ring all-gather in each node.
  double WholeNodesAllReduceTime(int64_t nodes, int64_t k, int64_t bytes) const;

  LinkClass Classify(const DeviceId& a, const DeviceId& b) const override;
  double CollectiveTime(CollectiveKind kind, const std::vector<DeviceId>& group,
                        int64_t bytes) const override;
  LinkBytes CollectiveLinkBytes(CollectiveKind kind, const std::vector<DeviceId>& group,
                                int64_t bytes) const override;
  int64_t TranslationPeriod() const override { return config_.devices_per_node; }
  double ComputeTime(double flops, int64_t bytes, DType dtype) const override;
  double MessageTime(const DeviceId& src, const DeviceId& dst, int64_t bytes) const override;
  double FastestMessagesTime(int64_t count, int64_t bytes) const override;
  int64_t NodeSize() const override { return config_.devices_per_node; }
  double InterNodeTime(int64_t count, int64_t bytes) const override;

 private:
  // How a group whose device indices ascend, all of one type, lies on nodes: its members form
  // one run per node. Not valid for other groups (the callers then count with maps).
  struct NodeRuns {
    bool valid = false;
    int64_t nodes = 0;
    int64_t square_sum = 0;  // the sum over nodes of (members on it)^2
    int64_t first = 0;       // members on the first node
    bool equal = true;       // every node holds as many
  };
  NodeRuns RunsOnNodes(const std::vector<DeviceId>& group) const;
  // The ring formulas of the header for p members whose slowest hop is `link`, over `rails`
  // NICs a node.
  double RingTime(CollectiveKind kind, int64_t p, int64_t bytes, LinkClass link,
                  int64_t rails) const;
  // A collective's time, and the members per node of the hierarchical all-reduce when that is
  // what it runs (0: the ring formulas).
  struct Pricing {
    double seconds = 0;
    int64_t hierarchical_members = 0;
  };
  Pricing Price(CollectiveKind kind, const std::vector<DeviceId>& group, int64_t bytes) const;

  void AllToAllLinkBytes(const std::vector<DeviceId>& group, int64_t per_pair,
                         LinkBytes& out) const;

  AlphaBetaConfig config_;
  std::array<LinkParams, 4> link_table_;  // by LinkClass, for the hot path
  LinkParams fastest_;                    // FastestMessagesTime's: least latency, widest link
};

}  // namespace twinflow::sbp
