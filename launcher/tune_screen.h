#pragma once
// What `twinflow tune` learns of a candidate from its model alone, before compiling it: the
// bytes of its variables (models::VariableBytesFloor: more than the device holds, and no Plan
// of it fits) and a lower bound on its step time (sim::StepTimeLowerBound: slower than the
// strategies already ranked, and it cannot join them). Both depend on the degrees, the chunks,
// sp, zero and recomputation, not on the micro-batches or the schedule, so candidates alike in
// those share one model build.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/graph/op_registry.h"
#include "launcher/tune_outcome.h"
#include "models/model.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::launcher {

struct Screen {
  int64_t floor_bytes = 0;  // the variables' bytes on the busiest device
  double bound_s = 0;       // no Plan of the strategy steps faster
  std::string error;        // why its model cannot be built (then neither figure is known)
};

// Lifetime: keeps `registry` and `spec` by reference; both must outlive this (the tune's).
class Screens {
 public:
  Screens(const graph::OpRegistry& registry, const sim::ClusterSpec& spec)
      : registry_(registry), spec_(spec) {}

  // The screen of `candidate`. When it is not known yet, `build` builds its model, which is
  // left in `built` for the caller to compile; an Error it throws becomes the screen's error
  // (not kept: the next candidate alike tries again).
  Screen Of(const Candidate& candidate, const std::function<models::BuiltModel()>& build,
            std::optional<models::BuiltModel>& built);

 private:
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool, bool>;
  const graph::OpRegistry& registry_;
  const sim::ClusterSpec& spec_;
  std::map<Key, Screen> known_;
};

// The step time a candidate must beat to rank in the top `top` of `outcomes`: the top-th
// fastest of those that fit; infinite while fewer fit.
double StepToBeat(const std::vector<Outcome>& outcomes, int64_t top);

// Why a candidate was not simulated: "not simulated: its kernels alone take at least 9.1 s a
// step, and the top 20 are faster (at most 8.7 s)".
std::string NotSimulatedWhy(double bound_s, double to_beat_s, int64_t top);

}  // namespace twinflow::launcher
