#pragma once
// Which slots of one device's memory plan share bytes. Lifetime-based planning puts registers
// that are never live together in the same bytes; executors use this list to check that they
// indeed never are (a hostile or wrong Plan must fail, not corrupt data).
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "engine/plan/plan.pb.h"

namespace twinflow::plan {

struct SlotKey {
  int64_t regst = 0;
  int32_t slot = 0;
};

// Every pair of placed slots (of registers with bytes) whose byte ranges overlap, each pair
// once, but for the input and output of an in-place all_reduce (CollectiveDesc.in_place) or
// REPEAT (Task.repeat_in_place), which are meant to. Entries naming no register are skipped
// (validation reports those).
std::vector<std::pair<SlotKey, SlotKey>> OverlappingSlots(const Plan& plan,
                                                          const MemoryPlan& memory);

// The task's data input and output registers (those with a tensor), paired in order: input k
// with output k. None unless there are as many of each.
std::vector<std::pair<int64_t, int64_t>> DataPairs(const Plan& plan, const Task& task);

// The data input and output registers of an in-place all_reduce (CollectiveDesc.in_place),
// pair by pair (a bucket has several), or none for any other task (or one whose register ids
// are out of range, or whose inputs and outputs do not pair up).
std::vector<std::pair<int64_t, int64_t>> InPlaceRegsts(const Plan& plan, const Task& task);

// The data input and output registers of a REPEAT that reads in place (Task.repeat_in_place),
// or nothing for any other task. Unlike an all_reduce's, its output's bytes are its input's
// for as long as the input lives: the output adds no bytes, and returning it frees none.
std::optional<std::pair<int64_t, int64_t>> RepeatInPlaceRegsts(const Plan& plan, const Task& task);

}  // namespace twinflow::plan
