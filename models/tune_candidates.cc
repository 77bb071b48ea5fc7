#include "models/tune_candidates.h"

#include <algorithm>

namespace twinflow::models {
namespace {

std::vector<std::pair<Schedule, int64_t>> Schedules(int64_t pp, int64_t mb) {
  if (pp == 1) return {{Schedule::kOneFOneB, 1}};
  std::vector<std::pair<Schedule, int64_t>> out = {
      {Schedule::kOneFOneB, 1}, {Schedule::kGPipe, 1}, {Schedule::kZeroBubbleH1, 1}};
  if (mb % pp == 0) out.push_back({Schedule::kOneFOneB, 2});
  return out;
}

}  // namespace

std::string Candidate::Text(const std::string& fixed) const {
  std::string s = "dp=" + std::to_string(dp) + ",tp=" + std::to_string(tp) +
                  ",pp=" + std::to_string(pp) + ",mb=" + std::to_string(mb);
  if (pp > 1) s += std::string(",schedule=") + ScheduleName(schedule);
  if (vp > 1) s += ",vp=" + std::to_string(vp);
  if (sp) s += ",sp=true";
  if (zero) s += ",zero=1";
  if (recompute) s += ",recompute=full";
  return fixed.empty() ? s : s + "," + fixed;
}

std::vector<Candidate> EnumerateCandidates(int64_t devices, int64_t per_node, int64_t max_mb) {
  std::vector<Candidate> out;
  for (int64_t tp = 1; tp <= std::min(devices, per_node); tp *= 2) {
    for (int64_t pp = 1; tp * pp <= devices; pp *= 2) {
      if (devices % (tp * pp) != 0) continue;
      const int64_t dp = devices / (tp * pp);
      for (int64_t mb = 1; mb <= max_mb; mb *= 2) {
        if (pp > 1 && mb < pp) continue;
        for (const auto& [schedule, vp] : Schedules(pp, mb)) {
          for (const bool sp : {false, true}) {
            if (sp && tp == 1) continue;
            Candidate c;
            c.dp = dp, c.tp = tp, c.pp = pp, c.mb = mb, c.schedule = schedule, c.vp = vp;
            c.sp = sp;
            out.push_back(c);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace twinflow::models
