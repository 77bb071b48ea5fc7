#include "planner/tune_candidates.h"

#include <algorithm>
#include <utility>

#include "engine/core/error.h"

namespace twinflow::planner {
namespace {

using parallel::Field;
using parallel::Schedule;

std::vector<std::pair<Schedule, int64_t>> Schedules(int64_t pp, int64_t mb) {
  if (pp == 1) return {{Schedule::kOneFOneB, 1}};
  std::vector<std::pair<Schedule, int64_t>> out = {
      {Schedule::kOneFOneB, 1}, {Schedule::kGPipe, 1}, {Schedule::kZeroBubbleH1, 1}};
  if (mb % pp == 0) out.push_back({Schedule::kOneFOneB, 2});
  return out;
}

// `base` with the degrees, micro-batches, schedule, chunks and sp of a candidate, as if written.
parallel::Strategy Candidate(const parallel::Strategy& base, int64_t dp, int64_t tp, int64_t pp,
                             int64_t mb, Schedule schedule, int64_t vp, bool sp) {
  parallel::Strategy s = base;
  s.dp = dp, s.tp = tp, s.pp = pp, s.micro_batches = mb, s.schedule = schedule;
  s.virtual_stages = vp, s.sequence_parallel = sp;
  s.dp_source = s.tp_source = s.pp_source = parallel::DegreeSource::kGiven;
  for (Field f : {Field::kDp, Field::kTp, Field::kPp, Field::kMb}) s.Give(f);
  return s;
}

}  // namespace

std::vector<parallel::Strategy> EnumerateCandidates(const CandidateSpace& space) {
  const int64_t devices = space.devices, max_mb = space.max_mb;
  std::vector<parallel::Strategy> out;
  for (int64_t tp = 1; tp <= std::min(devices, space.per_node); tp *= 2) {
    for (int64_t pp = 1; tp * pp <= devices && (pp == 1 || space.pipeline); pp *= 2) {
      if (devices % (tp * pp) != 0) continue;
      const int64_t dp = devices / (tp * pp);
      for (int64_t mb = 1; mb <= max_mb; mb *= 2) {
        if (pp > 1 && mb < pp) continue;
        for (const auto& [schedule, vp] : Schedules(pp, mb)) {
          for (const bool sp : {false, true}) {
            if (sp && (tp == 1 || !space.sequence_parallel)) continue;
            out.push_back(Candidate(space.base, dp, tp, pp, mb, schedule, vp, sp));
          }
        }
      }
    }
  }
  return out;
}

parallel::Strategy ParseTuneOptions(const std::string& text) {
  if (text.empty()) return {};
  const parallel::Strategy base = parallel::ParseStrategy(text);
  if (base.automatic) throw InvalidArgumentError("auto: the tuner varies the degrees itself");
  for (Field f :
       {Field::kDp, Field::kTp, Field::kPp, Field::kMb, Field::kVp, Field::kSchedule, Field::kSp}) {
    if (base.Gives(f)) {
      throw InvalidArgumentError(std::string("'") + parallel::FieldName(f) +
                                 "' is what the tuner varies; options keep only the others");
    }
  }
  return base;
}

}  // namespace twinflow::planner
