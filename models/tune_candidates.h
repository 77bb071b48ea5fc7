#pragma once
// The strategies `twinflow tune` tries: every (dp, tp, pp) the cluster allows, with their
// micro-batches, pipeline schedules and sequence parallelism.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/strategy.h"

namespace twinflow::models {

struct Candidate {
  int64_t dp = 1, tp = 1, pp = 1, mb = 1;
  Schedule schedule = Schedule::kOneFOneB;
  int64_t vp = 1;          // model chunks per pipeline rank (interleaved 1F1B)
  bool sp = false;         // sequence parallelism
  bool zero = false;       // zero=1: optimizer state sharded over dp (tried when out of memory)
  bool recompute = false;  // recompute=full (tried when out of memory even so)
  // The strategy text, with `fixed` (options every candidate keeps, "precision=bf16") appended.
  std::string Text(const std::string& fixed = "") const;
};

// Every (dp, tp, pp) whose product is the device count, tensor parallelism inside a node
// (with and without sequence parallelism), with micro-batches 1..max_mb (powers of two, at
// least pp when pipelined) and every schedule: 1F1B, GPipe, ZB-H1 and interleaved 1F1B with
// two chunks a rank (micro-batches a multiple of pp).
std::vector<Candidate> EnumerateCandidates(int64_t devices, int64_t per_node, int64_t max_mb);

}  // namespace twinflow::models
