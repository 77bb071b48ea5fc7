#include "engine/core/collective_kind.h"

namespace twinflow {

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kBroadcast:
      return "broadcast";
  }
  return "unknown";
}

bool CollectiveReduces(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter;
}

bool CollectiveGathersAxis(CollectiveKind kind) {
  return kind == CollectiveKind::kAllGather || kind == CollectiveKind::kAllToAll;
}

bool CollectiveScattersAxis(CollectiveKind kind) {
  return kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kAllToAll;
}

}  // namespace twinflow
