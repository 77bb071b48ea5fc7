#include "simulator/collectives/tree.h"

#include <algorithm>

namespace twinflow::sim {

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

int MaxTreeDegree(int n) {
  std::vector<int> degree(std::max(0, n), 0);
  for (const auto& [child, parent] : DoubleBinaryTreeEdges(n)) {
    ++degree[child];
    ++degree[parent];
  }
  return degree.empty() ? 0 : *std::max_element(degree.begin(), degree.end());
}

int TreeDepth(int n) {
  int depth = 0;
  while ((1 << depth) < n) ++depth;
  return depth;
}

double TreeAllReduceSeconds(int n, int64_t bytes, const Link& link) {
  if (n <= 1 || bytes <= 0) return 0;
  const double b = link.bandwidth() * link.efficiency();
  return 2 * TreeDepth(n) * link.latency_s() +
         MaxTreeDegree(n) * static_cast<double>(bytes) / 2 / b;
}

}  // namespace twinflow::sim
