#pragma once
// What each register of a Plan holds, for the memory report. Decided once per register from
// the Plan's structure, in this order of precedence:
//   weights          a VARIABLE's register that the loss depends on (the forward pass reads it),
//                    and the updated value an ASSIGN writes into one;
//   optimizer state  any other VARIABLE's register (momentum, Adam moments, step) and its
//                    updated value;
//   gradients        what an optimizer update (a task whose output an ASSIGN writes into a
//                    weight) reads besides variables, and, back through COPY, COLLECTIVE, ACC,
//                    SEND and RECV tasks, what those were made from (the all-reduce's input,
//                    the micro-batches' parts);
//   communication    any other output of a COPY, SEND, RECV or COLLECTIVE task (boxing);
//   activations      the rest: forward values, recomputed ones and their gradients.
// Control registers (no bytes) are activations; they count for nothing.
#include <array>
#include <cstdint>
#include <vector>

#include "engine/plan/plan.pb.h"

namespace twinflow::compiler {

enum class MemoryCategory { kWeights, kGradients, kOptimizerState, kActivations, kCommunication };
constexpr int kMemoryCategories = 5;
constexpr MemoryCategory kAllMemoryCategories[kMemoryCategories] = {
    MemoryCategory::kWeights, MemoryCategory::kGradients, MemoryCategory::kOptimizerState,
    MemoryCategory::kActivations, MemoryCategory::kCommunication};

// "weights", "gradients", "optimizer state", "activations", "communication".
const char* MemoryCategoryName(MemoryCategory category);

// Bytes by category, indexed by the enum's value.
using CategoryBytes = std::array<int64_t, kMemoryCategories>;

// One category per register, by register id.
std::vector<MemoryCategory> RegstCategories(const plan::Plan& plan);

}  // namespace twinflow::compiler
