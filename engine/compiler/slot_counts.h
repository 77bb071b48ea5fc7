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
//    producer never waits for its consumer beyond the lag.
// 4. A register of per-micro-batch data (k micro-batches a step): GPipe lets every micro-batch
//    run ahead, k slots; 1F1B lets stage s run min(k, stages - s) ahead. What only an ACC
//    reads needs one (the ACC takes each piece as it comes, on the same device), and a
//    REPEAT's output at most two (one pass reads it).
// 5. Every other register: 1.
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "engine/compiler/task_chains.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::compiler {

struct SlotSchedule {
  int64_t micro_batches = 1;
  bool one_f_one_b = true;
  int stages = 1;
  std::map<int32_t, int> device_stage;  // plan device -> pipeline stage
  // By register id: whether it carries data once per micro-batch (ids beyond it: per step).
  std::vector<bool> per_micro_batch;
};

void DecideSlotCounts(plan::Plan& plan, const std::vector<TaskChain>& chains,
                      const std::optional<SlotSchedule>& schedule);

}  // namespace twinflow::compiler
