#pragma once
// What `twinflow tune` learns of a candidate from its model alone, before compiling it: a floor
// under its memory (planner::MemoryFloor, its variables and the activations its schedule keeps:
// more than the device holds, and no Plan of it fits) and a lower bound on its step time
// (planner::StepTimeLowerBound: slower than the strategies already ranked, and it cannot join
// them). What they are made of depends on the degrees, the chunks, sp, zero and recomputation;
// the schedule only weighs it, and so do the micro-batches: the graph holds one micro-batch,
// and a profile weighs any candidate with as many or more safely (one with fewer gets only
// the part that does not shrink). Plain candidates are screened in their enumeration order, so
// each family's profile is taken at its fewest; a retry's (zero, recompute) at whichever comes
// first. So candidates alike in the rest share one model build.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/compiler/boxing_pricer.h"
#include "engine/compiler/sbp_search.h"
#include "engine/core/error.h"
#include "engine/graph/op_registry.h"
#include "models/model.h"
#include "planner/memory_floor.h"
#include "planner/step_bound.h"
#include "planner/throughput.h"
#include "planner/tune_outcome.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::planner {

struct Screen {
  MemoryProfile memory;       // what MemoryFloor weighs
  planner::WorkProfile work;  // what planner::StepTimeLowerBound weighs
  StepWork step;              // what its model does in a step (any micro-batches: one batch)
  std::string error;          // why its model cannot be built (then neither is known)
};

// The floor under the arena of the candidate's busiest device, and the bound under its step.
int64_t FloorBytes(const Screen& screen, const parallel::Strategy& candidate);
double BoundSeconds(const Screen& screen, const parallel::Strategy& candidate);

// Lifetime: keeps `registry` and `spec` by reference; both must outlive this (the tune's).
class Screens {
 public:
  Screens(const graph::OpRegistry& registry, const sim::ClusterSpec& spec)
      : registry_(registry), spec_(spec) {}

  // The screen of `candidate`. When it is not known yet, `build` builds its model, which is
  // left in `built` for the caller to compile; an Error it throws becomes the screen's error
  // (not kept: the next candidate alike tries again; the reference then lasts until the next
  // call).
  const Screen& Of(const parallel::Strategy& candidate,
                   const std::function<models::BuiltModel()>& build,
                   std::optional<models::BuiltModel>& built);

 private:
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, parallel::ZeroStage,
                         parallel::Recompute>;
  const graph::OpRegistry& registry_;
  const sim::ClusterSpec& spec_;
  std::map<Key, Screen> known_;
  Screen failed_;  // the last screen whose build failed
};

// The models tune compiled last and their SBP searches, by what the graph depends on: the
// screen's key and the micro-batches, not the schedule, which only the lowering reads; so the
// schedules of one strategy search once. It keeps one family (dp, tp, pp, vp, mb: with and
// without sp, plain, zero and recompute) at a time, the candidates being evaluated family by
// family (their schedules, alike in bound, next to each other).
class SearchCache {
 public:
  struct Entry {
    std::optional<models::BuiltModel> model;
    std::optional<compiler::SbpAssignment> assignment;
  };
  // The entry of `candidate` (empty when new); the other families' entries are dropped.
  Entry& For(const parallel::Strategy& candidate);
  // Boxing times shared by every search of the tune (one cluster, one cost model): families
  // differing in sp, zero, recompute or stages price mostly the same edges.
  const std::shared_ptr<compiler::BoxingTimes>& times() const { return times_; }

 private:
  std::shared_ptr<compiler::BoxingTimes> times_ = std::make_shared<compiler::BoxingTimes>();
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, int64_t, parallel::ZeroStage,
                         parallel::Recompute>;
  std::map<Key, Entry> entries_;
};

// The step time a candidate must beat to rank in the top `top` of `outcomes`: the top-th
// fastest of those that fit; infinite while fewer fit.
double StepToBeat(const std::vector<Outcome>& outcomes, int64_t top);

// Why a candidate was dropped, from the error that dropped it: its message's first line, whole
// (the ranking's tables and JSON keep one line per candidate).
std::string DroppedWhy(const Error& error);

// Why a candidate was not simulated: "not simulated: its kernels alone take at least 9.1 s a
// step, and the top 20 are faster (at most 8.7 s)".
std::string NotSimulatedWhy(double bound_s, double to_beat_s, int64_t top);

}  // namespace twinflow::planner
