#pragma once
// What `twinflow tune` learnt of one candidate, and the forms it travels in: text between the
// ranks of a distributed tune (exact: a gathered ranking is bit-identical to one rank's), and
// JSON for --json.
#include <cstdint>
#include <string>
#include <vector>

#include "planner/tune_candidates.h"

namespace twinflow::planner {

// What became of a candidate: ranked, or why not. The tuner decides by this, never by `why`.
enum class Verdict {
  kRanked,        // simulated, and it fits
  kOutOfMemory,   // its memory floor or its simulated arena passes the device's
  kNotSimulated,  // its step-time bound is slower than the strategies already ranked
  kDeadlocks,     // its Plan never finishes a step in simulation
  kRefused,       // it cannot be built or compiled (why: the error's first line)
};
const char* VerdictName(Verdict verdict);  // "ranked", "out_of_memory", ...

struct Outcome {
  int64_t index = 0;             // the candidate's place in EnumerateCandidates' order
  parallel::Strategy candidate;  // as evaluated: with the retry's zero= or recompute= if any
  Verdict verdict = Verdict::kRefused;
  std::string why;  // when not ranked
  double step_s = 0, samples_per_s = 0, mfu = 0;
  double tokens_per_device_s = 0;       // tokens/s per device (0 for models without a sequence)
  double model_flops_per_device_s = 0;  // the model's flops (simulator/mfu.h) per device per s
  int64_t peak_bytes = 0;
  double bound_s = 0;  // the step-time lower bound it was screened by (0: none, or not screened)
  // Ranked by its proxies' estimate (proxy_estimate.h), not simulated on its whole model: the
  // tuner re-simulates those that reach the top before it returns.
  bool estimated = false;
  std::string parallelism;  // ParallelismTable of what the strategy really ran

  bool ok() const { return verdict == Verdict::kRanked; }
};

// Fastest first among those that fit, then those that did not, each in candidate order.
void RankOutcomes(std::vector<Outcome>& outcomes);

// The outcomes as text, and back (candidates are re-derived from `candidates` by index).
// CommError-free: a malformed text throws InvalidArgumentError naming what was wrong.
std::string EncodeOutcomes(const std::vector<Outcome>& outcomes);
std::vector<Outcome> DecodeOutcomes(const std::string& text,
                                    const std::vector<parallel::Strategy>& candidates);

// The ranked outcomes as JSON: [{"rank": 1, "strategy": ..., "step_s": ...}, ...], those that
// do not fit last with rank null, their verdict and why.
std::string OutcomesJson(const std::vector<Outcome>& ranked);

}  // namespace twinflow::planner
