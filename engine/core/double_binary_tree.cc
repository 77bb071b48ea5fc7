#include "engine/core/double_binary_tree.h"

#include <algorithm>

namespace twinflow {

std::vector<int> BinaryTreeParents(int n) {
  std::vector<int> parents(std::max(0, n), -1);
  if (n <= 1) return parents;
  int top = 1;
  while (top * 2 < n) top *= 2;
  parents[top] = 0;
  std::vector<int> inner = {top};
  while (!inner.empty()) {
    const int p = inner.back();
    inner.pop_back();
    const int bit = p & -p;
    if (bit == 1) continue;  // odd: a leaf
    parents[p - bit / 2] = p;
    inner.push_back(p - bit / 2);
    int step = bit / 2;
    while (step >= 1 && p + step >= n) step /= 2;  // the right subtree, cut at n
    if (step >= 1) {
      parents[p + step] = p;
      inner.push_back(p + step);
    }
  }
  return parents;
}

std::vector<std::pair<int, int>> DoubleBinaryTreeEdges(int n) {
  const std::vector<int> parents = BinaryTreeParents(n);
  // The second tree's rank at each position: mirrored for even n, shifted for odd n.
  const auto second = [n](int q) { return n % 2 == 0 ? n - 1 - q : (q + 1) % n; };
  std::vector<std::pair<int, int>> edges;
  for (int q = 0; q < n; ++q) {
    if (parents[q] >= 0) edges.push_back({q, parents[q]});
  }
  for (int q = 0; q < n; ++q) {
    if (parents[q] >= 0) edges.push_back({second(q), second(parents[q])});
  }
  return edges;
}

int MaxTreeDegree(int n) { return n <= 1 ? 0 : std::min(n, 4); }

int TreeDepth(int n) {
  int depth = 0;
  while ((1 << depth) < n) ++depth;
  return depth;
}

}  // namespace twinflow
