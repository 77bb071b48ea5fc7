#pragma once
// A test executor for the Actor state machine: every outstanding message and every pending Done
// sits in one pool, and each step delivers one of them, chosen at random (seeded) or oldest
// first. It records every Launch in order. When the pool runs dry while an actor is unfinished,
// the Plan has deadlocked, and the report says what each unfinished actor waits on. It also
// tracks which piece each slot holds, to catch a producer overwriting a slot still being read,
// either the slot itself or, where the memory plan shares bytes, another slot in them. The
// simulator does the same with simulated time in place of the random choice.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/plan/plan.pb.h"
#include "engine/runtime/actor.h"

namespace twinflow::runtime {

struct TestRunOptions {
  uint64_t seed = 0;
  bool in_order = false;          // deliver the oldest event first instead of a random one
  int64_t max_events = 10000000;  // a guard against an actor that never stops
};

struct TestRunResult {
  bool finished = false;         // every actor finished
  bool deadlocked = false;       // the pool ran dry first
  std::string report;            // one WaitingOn line per unfinished actor, or why the run stopped
  std::vector<Launch> launches;  // in launch order
  std::vector<std::vector<int64_t>> pieces_seen;  // per task: Launch.piece of each act, in order
  // (consumer task, regst) -> the pieces of that register the consumer acted on, in order.
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> inputs_seen;
  std::vector<int64_t> acts;  // per task
  // Reads of a slot that no longer (or not yet) holds the piece the Launch names, checked when
  // the act starts and again when it is done: a producer overwrote a slot still in use.
  std::vector<std::string> violations;
  int64_t events = 0;  // messages and Dones delivered
};

// How many pieces a SOURCE or VARIABLE task makes (other tasks ignore it).
using SourcePiecesFn = std::function<int64_t(int64_t task)>;

// From the plan alone: pieces_per_step x steps for a SOURCE, steps for a VARIABLE.
SourcePiecesFn PiecesFromPlan(const plan::Plan& plan, int64_t steps);

TestRunResult RunActors(const plan::Plan& plan, const SourcePiecesFn& source_pieces,
                        const TestRunOptions& options);

TestRunResult RunWithRandomDelivery(const plan::Plan& plan, int64_t steps, uint64_t seed);
TestRunResult RunWithRandomDelivery(const plan::Plan& plan, const SourcePiecesFn& source_pieces,
                                    uint64_t seed);

}  // namespace twinflow::runtime
