#pragma once
// What `twinflow tune` learnt of one candidate, and the forms it travels in: text between the
// ranks of a distributed tune (exact: a gathered ranking is bit-identical to one rank's), and
// JSON for --json.
#include <cstdint>
#include <string>
#include <vector>

#include "models/tune_candidates.h"

namespace twinflow::launcher {

using models::Candidate;

struct Outcome {
  int64_t index = 0;  // the candidate's place in EnumerateCandidates' order
  Candidate candidate;
  bool ok = false;
  std::string why;  // when not ok
  double step_s = 0, samples_per_s = 0, mfu = 0;
  int64_t peak_bytes = 0;
  std::string parallelism;  // ParallelismTable of what the strategy really ran
};

// Fastest first among those that fit, then those that did not, each in candidate order.
void RankOutcomes(std::vector<Outcome>& outcomes);

// The outcomes as text, and back (candidates are re-derived from `candidates` by index).
// CommError-free: a malformed text throws InvalidArgumentError naming what was wrong.
std::string EncodeOutcomes(const std::vector<Outcome>& outcomes);
std::vector<Outcome> DecodeOutcomes(const std::string& text,
                                    const std::vector<Candidate>& candidates);

// The ranked outcomes as JSON: [{"rank": 1, "strategy": ..., "step_s": ...}, ...], those that
// do not fit last with rank null and why.
std::string OutcomesJson(const std::vector<Outcome>& ranked, const std::string& fixed);

}  // namespace twinflow::launcher
