#pragma once
// The strategies `twinflow tune` and `tw.tune` try: every (dp, tp, pp) the cluster allows, with
// their micro-batches, pipeline schedules and sequence parallelism, each a parallel::Strategy
// built on the options every candidate keeps (--with).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/parallel/strategy.h"

namespace twinflow::planner {

// What the tuner may vary, and what it keeps.
struct CandidateSpace {
  int64_t devices = 1;
  int64_t per_node = 1;     // tensor parallelism stays inside a node
  int64_t max_mb = 8;       // the most micro-batches per step
  parallel::Strategy base;  // the options every candidate keeps (--with)
  // What the model's graph can express: a graph without pipeline stages (a Python graph that
  // never calls set_stage) gains nothing from pp or vp, one without sequence-parallel pins
  // nothing from sp; the tuner never ranks options that cannot change the graph.
  bool pipeline = true;
  bool sequence_parallel = true;
};

// Every (dp, tp, pp) whose product is the device count, tensor parallelism inside a node
// (with and without sequence parallelism), with micro-batches 1..max_mb (powers of two, at
// least pp when pipelined) and every schedule: 1F1B, GPipe, ZB-H1 and interleaved 1F1B with
// two chunks a rank (micro-batches a multiple of pp). Each is `base` (its fields other than
// these) with these set, as if written.
std::vector<parallel::Strategy> EnumerateCandidates(const CandidateSpace& space);

// The options every candidate keeps (`--with`, tw.tune's options=) as a strategy whose given
// fields say which (the retry ladder leaves a given zero= or recompute= alone); empty: none.
// InvalidArgumentError for what the tuner varies itself (degrees, mb, vp, schedule, sp, auto).
parallel::Strategy ParseTuneOptions(const std::string& text);

}  // namespace twinflow::planner
