#pragma once
// Random valid Plans for property tests of the validator, the loader and the actor state
// machine: a random DAG of tasks (sources, computes, ACC/REPEAT pairs, sinks) with random slot
// counts, a few lagged (loop-closing) registers and control registers, all_reduce collectives,
// consistent register sizes, comm groups and memory plans. Every generated Plan passes
// ValidatePlan; tests mutate them to get invalid ones.
#include <cstdint>
#include <string>

#include "engine/core/rng.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::testing {

struct RandomPlanOptions {
  int max_tasks = 12;
  int max_slots = 3;  // slots are drawn in 1..max_slots, then raised where they would deadlock
  bool rate_changes = true;  // ACC and REPEAT tasks
  bool lags = true;          // registers with lag >= 1 closing loops
};

plan::Plan RandomPlan(Rng& rng, const RandomPlanOptions& options = {});

// How many pieces each SOURCE/VARIABLE task should produce so that every ACC divides its
// input evenly (the executor passes this to the Actor constructor).
int64_t SourcePieces(const plan::Plan& plan, int64_t task, int64_t steps);

// SimulateTokens, the deadlock oracle RandomPlan sizes slots with, is in token_sim.h.

}  // namespace twinflow::testing
