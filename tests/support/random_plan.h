#pragma once
// Random valid Plans for property tests of the validator, the loader and the actor state
// machine: a random DAG of tasks (sources, computes, ACC/REPEAT pairs, sinks) with random slot
// counts, a few lagged (loop-closing) registers and control registers, all_reduce collectives,
// consistent register sizes, comm groups and memory plans. Every generated Plan passes ValidatePlan; tests mutate them to get invalid ones.
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

// An oracle for executor tests: plays the register protocol of engine/runtime/actor.h on a
// valid `plan` for `steps` steps, every act finishing at once and each task acting as soon as
// it can, SOURCE/VARIABLE tasks acting SourcePieces times. Returns "" when every task finishes,
// else which tasks are stuck and on what. An enabled act stays enabled until it runs, so if
// this schedule deadlocks, every schedule does (and if it finishes, every schedule does).
// RandomPlan raises slot counts where this finds them too small, so its Plans never deadlock.
std::string SimulateTokens(const plan::Plan& plan, int64_t steps);

}  // namespace twinflow::testing
