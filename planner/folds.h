#pragma once
// The symmetries a simulator Plan of a strategy may be lowered folded by (plan_fold.h): copy 0
// of them is lowered and simulated, standing in for the others.
#include <cstdint>

#include "engine/parallel/strategy.h"
#include "engine/plan/plan_fold.h"

namespace twinflow::planner {

// The data-parallel symmetry on nodes of `devices_per_node` devices: each stage's block of
// dp x tp devices as copies of stride lcm(tp, devices_per_node), so that every copy starts a
// node. Not folded (copies 1) for a searched strategy or when fewer than two copies fit.
plan::DeviceFold DataParallelFold(const parallel::Strategy& strategy, int64_t devices_per_node);
// --replica's fold: every data-parallel replica a copy (stride tp, copies dp), whether or not
// the copies sit alike on the nodes. Exact where they do (then DataParallelFold's fold is a
// coarser one of the same Plan); otherwise an approximation: the other replicas are timed as
// replica 0, though their pipeline hand-offs may cross nodes where replica 0's do not. Memory
// is the exact Plan's either way. None for dp < 2 or an automatic strategy.
plan::DeviceFold ReplicaFold(const parallel::Strategy& strategy);

}  // namespace twinflow::planner
