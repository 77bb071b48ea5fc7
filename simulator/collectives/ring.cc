#include "simulator/collectives/ring.h"

#include "engine/core/error.h"

namespace twinflow::sim {

double RingCollectiveSeconds(const std::string& kind, int p, int64_t bytes, const Link& link) {
  if (p <= 1 || bytes <= 0) return 0;
  const double a = link.latency_s();
  const double b = link.bandwidth() * link.efficiency();
  const double s = static_cast<double>(bytes);
  const double share = static_cast<double>(p - 1) / p;
  if (kind == "all_reduce") return 2 * (p - 1) * a + 2 * share * s / b;
  if (kind == "reduce_scatter" || kind == "all_gather" || kind == "all_to_all") {
    return (p - 1) * a + share * s / b;
  }
  if (kind == "broadcast") return (p - 1) * a + s / b;
  throw PlanError("no time model for collective '" + kind + "'");
}

}  // namespace twinflow::sim
