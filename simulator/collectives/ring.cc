#include "simulator/collectives/ring.h"

#include "engine/core/error.h"

namespace twinflow::sim {

double RingCollectiveSeconds(CollectiveKind kind, int p, int64_t bytes, const Link& link) {
  if (p <= 1 || bytes <= 0) return 0;
  const double a = link.latency_s();
  const double b = link.bandwidth() * link.efficiency();
  const double s = static_cast<double>(bytes);
  const double share = static_cast<double>(p - 1) / p;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * (p - 1) * a + 2 * share * s / b;
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kAllToAll:
      return (p - 1) * a + share * s / b;
    case CollectiveKind::kBroadcast:
      return (p - 1) * a + s / b;
  }
  throw PlanError(std::string("no time model for collective '") + CollectiveKindName(kind) + "'");
}

}  // namespace twinflow::sim
