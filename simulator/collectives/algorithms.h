#pragma once
// Collective algorithms as flows on the physical links (simulator/network/ports.h), run by the
// network (NetworkApi). An algorithm is a sequence of phases; a phase is one flow per directed link
// it uses, carrying everything the algorithm sends over that link in the phase (not one flow per
// ring step: the steps are pipelined anyway, and this keeps a collective to a few events),
// plus its steps x per-step latency, added once the flows drained. On idle links a phase takes
// latency + max over its links of bytes / bandwidth, which is exactly the closed forms of
// ring.h and tree.h. Algorithms (p devices, S bytes):
//   ring          the members sorted by device, each sending to the next: all_reduce
//                 2(p-1)/p S per link and 2(p-1) steps; reduce_scatter, all_gather (p-1)/p S,
//                 p-1 steps; broadcast an open chain, S per link, p-1 steps. Across nodes the
//                 hops between nodes go through NICs, the others through the node's fabric,
//                 and the latency per step is the inter-node one. Over whole nodes of k > 1
//                 members the bytes are split over k rings (NCCL's channels), channel c
//                 visiting each node's members rotated by c, so each leaves a node through a
//                 different NIC: every rail carries 1/k of the inter-node bytes.
//   all_to_all    each device sends (k-1)/p S to the k-1 peers on its node through its fabric
//                 port and (p-k)/p S to the others through its NIC (one flow per port), p-1
//                 steps.
//   hierarchical  all_reduce over whole nodes (k devices on each of n nodes, k > 1): a ring
//                 reduce-scatter in each node, a ring all-reduce of S/k between the nodes per
//                 rail (the devices of equal local index), a ring all-gather in each node.
//   tree          all_reduce over whole nodes: as hierarchical with NCCL's double binary tree
//                 (tree.h) between the nodes per rail (k = 1: the plain double binary tree).
// PlanCollective picks the fastest on idle links, as NCCL's tuner does from its own model;
// ties go to the ring, then hierarchical.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/collective_kind.h"
#include "simulator/hardware/cluster.h"
#include "simulator/network/flow.h"

namespace twinflow::sim {

struct CollectivePhase {
  std::vector<FlowSpec> flows;
  double latency_s = 0;  // steps x per-step latency
};

struct CollectivePlan {
  std::string algorithm;  // "ring", "hierarchical", "tree", "hierarchical tree"; "" for none
  std::vector<CollectivePhase> phases;
  double idle_s = 0;  // the time on idle links
};

// The fastest applicable algorithm for `kind` over `devices` (cluster devices, distinct),
// `bytes` as ring.h defines them. No phases for one device or no bytes.
CollectivePlan PlanCollective(CollectiveKind kind, const std::vector<int>& devices, int64_t bytes,
                              const Topology& topology);

// One device's share of an all-reduce of `bytes` over `replicas` identical data-parallel
// replicas, each on nodes of its own (SimOptions::data_parallel_replicas): a ring or a double
// binary tree between the replicas, whichever is faster, as one flow over the device's NIC
// ports carrying the busiest rank's bytes (each replica's device loads its own ports alike).
CollectivePlan ReplicaAllReducePlan(int device, int replicas, int64_t bytes,
                                    const Topology& topology);

// latency + max over links of bytes / bandwidth, summed over the phases.
double IdleSeconds(const std::vector<CollectivePhase>& phases, const Topology& topology);

}  // namespace twinflow::sim
