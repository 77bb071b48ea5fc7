#pragma once
// Plan-wide facts both the compiler and the executors need: a topological order of the tasks
// and how often each task acts per step.
#include <cstdint>
#include <vector>

#include "engine/plan/plan.pb.h"

namespace twinflow::plan {

// Whether the register's consumer act p reads its producer's act p (lag 0, no order table):
// the edges of one piece's graph. Lagged and order registers relate acts across pieces.
inline bool LinksOnePiece(const Regst& regst) {
  return regst.lag() == 0 && regst.order_counts_size() == 0;
}

// Per task, the SEND whose tag a RECV shares (-1 for other tasks and unmatched RECVs).
std::vector<int64_t> PeerSends(const Plan& plan);

// The tasks each task's acts enable within a piece: the consumers of its registers of lag 0,
// and for a SEND its RECV.
std::vector<std::vector<int64_t>> Successors(const Plan& plan);

// Tasks in topological order over Successors, ties by task id. PlanError when they form a
// cycle.
std::vector<int64_t> TopologicalTasks(const Plan& plan);

// Acts per step of every task: pieces_per_step for SOURCE and what it feeds, 1 for VARIABLE and
// per-step work; ACC divides by acc_count and REPEAT multiplies by repeat_count. A RECV acts as
// often as its peer SEND.
std::vector<int64_t> ActsPerStep(const Plan& plan);

}  // namespace twinflow::plan
