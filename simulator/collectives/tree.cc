#include "simulator/collectives/tree.h"

namespace twinflow::sim {

double TreeAllReduceSeconds(int n, int64_t bytes, const Link& link) {
  if (n <= 1 || bytes <= 0) return 0;
  const double b = link.bandwidth() * link.efficiency();
  return 2 * TreeDepth(n) * link.latency_s() +
         MaxTreeDegree(n) * static_cast<double>(bytes) / 2 / b;
}

}  // namespace twinflow::sim
