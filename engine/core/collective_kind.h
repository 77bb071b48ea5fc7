#pragma once
// The group operations a collective performs. The one C++ vocabulary for them: the boxing
// planner, the cost models, the lowering, the executors and the simulator all speak it, and
// CollectiveKindName is the only table of their names.
namespace twinflow {

enum class CollectiveKind { kAllGather, kAllReduce, kReduceScatter, kAllToAll, kBroadcast };

inline constexpr CollectiveKind kAllCollectiveKinds[] = {
    CollectiveKind::kAllGather, CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter,
    CollectiveKind::kAllToAll, CollectiveKind::kBroadcast};

const char* CollectiveKindName(CollectiveKind kind);  // the one table of these names

// What a kind does with tensor axes and values, so that callers need not list kinds.
bool CollectiveReduces(CollectiveKind kind);       // all_reduce, reduce_scatter
bool CollectiveGathersAxis(CollectiveKind kind);   // all_gather, all_to_all
bool CollectiveScattersAxis(CollectiveKind kind);  // reduce_scatter, all_to_all

}  // namespace twinflow
