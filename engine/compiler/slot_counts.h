#pragma once
// Slot counts: the one pass that decides how many slots every register of a Plan has. It runs
// after the chains are ordered (task_chains.h, and the 1F1B order) and before the memory plan
// (plan_memory.h), which only reads them. A slot is a piece in flight: the producer may run
// that many acts ahead of the register's slowest consumer.
//
// The rules, first match wins:
// 1. A register living inside one serial chain: 1, since the chain finishes a piece before it
//    starts the next (and so the memory plan can share its bytes).
// 2. A hand-made Plan without a schedule (tests) keeps every other count, and a register
//    without one (an added control register) gets max(1, lag).
// 3. A lagged control register (a chain's loop-back, the 1F1B order): max(1, lag), so its
//    producer never waits for its consumer beyond the lag. An order register (the interleaved
//    order): its table's length, a step's acts (its consumer returns each piece at once).
// 4. A register of per-micro-batch data (k micro-batches a step): GPipe lets every micro-batch
//    run ahead, k slots; 1F1B lets stage s run as many ahead as its schedule keeps in flight
//    (pipeline_schedule.h: min(k, stages - s) for one stage per device). What only an ACC
//    reads needs one (the ACC takes each piece as it comes, on the same device), a
//    REPEAT's output at most two (one pass reads it), and one read only on other devices (a
//    stage's output, which the next stage copies and keeps) at most two.
// 5. Every other register: 1.
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "engine/compiler/task_chains.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::compiler {

struct SlotSchedule {
  int64_t micro_batches = 1;
  // (plan device, pipeline stage) -> the micro-batches that stage runs ahead there; absent:
  // micro_batches.
  std::map<std::pair<int32_t, int32_t>, int64_t> ahead;
  // By register id: whether it carries data once per micro-batch (ids beyond it: per step).
  std::vector<bool> per_micro_batch;
};

void DecideSlotCounts(plan::Plan& plan, const std::vector<TaskChain>& chains,
                      const std::optional<SlotSchedule>& schedule);

}  // namespace twinflow::compiler
