#pragma once
// NCCL's double binary tree over n ranks, the shape both the simulator (simulator/collectives/
// tree.h runs it as flows) and the SBP search's cost model (engine/sbp/alpha_beta_cost_model.h
// prices an all-reduce by it) use, so that the search and the simulator agree on which
// all-reduce algorithm a group gets. Two binary trees span the ranks; the second is the first
// mirrored (even n: rank n-1-position) or shifted by one (odd n), which makes the first tree's
// leaves its inner nodes.
#include <utility>
#include <vector>

namespace twinflow {

// Parent position of every position 0..n-1 of one binary tree (-1 for the root, position 0).
// Position 0 has one child, the largest power of two below n; an even position p whose lowest
// set bit is b has children p - b/2 and p + b/2 (the step halved until it lies below n); odd
// positions are leaves. Depth ceil(log2 n).
std::vector<int> BinaryTreeParents(int n);

// The (child rank, parent rank) edges of both trees over ranks 0..n-1.
std::vector<std::pair<int, int>> DoubleBinaryTreeEdges(int n);

// The most edges of DoubleBinaryTreeEdges(n) that meet at one rank: 0 for one rank, 2 for two,
// 3 for three, 4 from four on (no rank is an inner node with two children in both trees). In
// closed form, since the search prices it per all-reduce; unit.DoubleBinaryTree checks it
// against the edges counted.
int MaxTreeDegree(int n);

// ceil(log2 n): the depth of each tree.
int TreeDepth(int n);

}  // namespace twinflow
