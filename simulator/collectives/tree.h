#pragma once
// NCCL's double binary tree for all-reduce across n ranks (one per node, or one per rail of a
// node); its shape is engine/core/double_binary_tree.h, shared with the SBP search's cost
// model. Each tree reduces half of the data up to its root and broadcasts it back down,
// pipelined in chunks, so both directions of every tree edge carry half the data at once, and
// every rank sends and receives at most 4 x S/2 = 2S (a ring: 2(n-1)/n S) but in 2 ceil(log2 n)
// steps of latency instead of 2(n-1):
//   tree all_reduce  2 ceil(log2 n) a + D S/2 / B
// D the most tree edges meeting at one rank over both trees (MaxTreeDegree). NCCL's tuner
// picks it over the ring for small messages or many nodes.
#include <cstdint>

#include "engine/core/double_binary_tree.h"
#include "simulator/hardware/cluster_spec.pb.h"

namespace twinflow::sim {

using ::twinflow::BinaryTreeParents;
using ::twinflow::DoubleBinaryTreeEdges;
using ::twinflow::MaxTreeDegree;
using ::twinflow::TreeDepth;

// The tree all-reduce time on idle links of bandwidth B (times efficiency), latency a.
double TreeAllReduceSeconds(int n, int64_t bytes, const Link& link);

}  // namespace twinflow::sim
