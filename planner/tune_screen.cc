#include "planner/tune_screen.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/core/text_format.h"

namespace twinflow::planner {

const Screen& Screens::Of(const parallel::Strategy& c,
                          const std::function<models::BuiltModel()>& build,
                          std::optional<models::BuiltModel>& built) {
  const Key key{c.dp, c.tp, c.pp, c.virtual_stages, c.sequence_parallel, c.zero, c.recompute};
  const auto found = known_.find(key);
  if (found != known_.end()) return found->second;
  Screen screen;
  try {
    built.emplace(build());
    screen.memory = planner::ProfileMemory(*built, registry_);
    screen.work =
        planner::ProfileWork(built->graph, registry_, spec_, built->strategy.micro_batches);
    screen.step = StepWorkOf(*built);
  } catch (const Error& e) {
    // Not kept: the error may be this candidate's own (its micro-batches, its schedule).
    failed_ = Screen{};
    failed_.error = DroppedWhy(e);
    return failed_;
  }
  return known_.emplace(key, std::move(screen)).first->second;
}

int64_t FloorBytes(const Screen& screen, const parallel::Strategy& c) {
  return MemoryFloor(screen.memory, c);
}

double BoundSeconds(const Screen& screen, const parallel::Strategy& c) {
  return StepTimeLowerBound(screen.work, c.micro_batches);
}

SearchCache::Entry& SearchCache::For(const parallel::Strategy& c) {
  const Key key{c.dp,   c.tp,       c.pp, c.virtual_stages, c.sequence_parallel, c.micro_batches,
                c.zero, c.recompute};
  for (auto it = entries_.begin(); it != entries_.end();) {
    const bool same_family = std::get<0>(it->first) == c.dp && std::get<1>(it->first) == c.tp &&
                             std::get<2>(it->first) == c.pp &&
                             std::get<3>(it->first) == c.virtual_stages &&
                             std::get<5>(it->first) == c.micro_batches;
    it = same_family ? std::next(it) : entries_.erase(it);
  }
  return entries_[key];
}

double StepToBeat(const std::vector<Outcome>& outcomes, int64_t top) {
  std::vector<double> steps;
  for (const Outcome& o : outcomes) {
    if (o.ok()) steps.push_back(o.step_s);
  }
  if (top <= 0 || static_cast<int64_t>(steps.size()) < top) {
    return std::numeric_limits<double>::infinity();
  }
  std::nth_element(steps.begin(), steps.begin() + (top - 1), steps.end());
  return steps[top - 1];
}

std::string DroppedWhy(const Error& error) {
  const std::string& message = error.message();
  return message.substr(0, message.find('\n'));
}

std::string NotSimulatedWhy(double bound_s, double to_beat_s, int64_t top) {
  return "not simulated: its kernels alone take at least " + FormatSeconds(bound_s) +
         " a step, and the top " + std::to_string(top) + " are faster (at most " +
         FormatSeconds(to_beat_s) + ")";
}

}  // namespace twinflow::planner
