#pragma once
// NCCL's double binary tree for all-reduce across n ranks (one per node, or one per rail of a
// node). Two binary trees span the ranks; each reduces half of the data up to its root and
// broadcasts it back down, pipelined in chunks, so both directions of every tree edge carry
// half the data at once. The second tree is the first mirrored (even n: rank n-1-position) or
// shifted by one (odd n), which makes the first tree's leaves its inner nodes: no rank is an
// inner node with two children in both trees, and every rank sends and receives at most
// 4 x S/2 = 2S (a ring: 2(n-1)/n S) but in 2 ceil(log2 n) steps of latency instead of 2(n-1):
//   tree all_reduce  2 ceil(log2 n) a + D S/2 / B
// D the most tree edges meeting at one rank over both trees (2 for n = 2, 3 for n = 3, 4 from
// n = 4 on; MaxTreeDegree). NCCL's tuner picks it over the ring for small messages or many
// nodes.
#include <cstdint>
#include <utility>
#include <vector>

#include "simulator/hardware/cluster_spec.pb.h"

namespace twinflow::sim {

// Parent position of every position 0..n-1 of one binary tree (-1 for the root, position 0).
// Position 0 has one child, the largest power of two below n; an even position p whose lowest
// set bit is b has children p - b/2 and p + b/2 (the step halved until it lies below n); odd
// positions are leaves. Depth ceil(log2 n).
std::vector<int> BinaryTreeParents(int n);

// The (child rank, parent rank) edges of both trees over ranks 0..n-1.
std::vector<std::pair<int, int>> DoubleBinaryTreeEdges(int n);

// The most edges of DoubleBinaryTreeEdges(n) that meet at one rank.
int MaxTreeDegree(int n);

// ceil(log2 n): the depth of each tree.
int TreeDepth(int n);

// The tree all-reduce time on idle links of bandwidth B (times efficiency), latency a.
double TreeAllReduceSeconds(int n, int64_t bytes, const Link& link);

}  // namespace twinflow::sim
