#pragma once
// Memory planning: one arena per device, every slot of every register at a fixed offset.
//
// A register that lives inside one chain (task_chains.h: produced and consumed only by the
// chain's tasks, serial or floating, at lag 0) is live over a fixed span of the chain's
// positions, from its producer to its last consumer (a floating collective counts over the whole
// gap it may run in), and the chain finishes a piece before it starts the next. It
// has one slot (slot_counts.h), and shares bytes with the chain's other such registers whose spans
// do not meet. Every other slot (variables, inputs, activations kept for the backward pass, values
// crossing devices or rates) has bytes of its own, since when it dies depends on the run.
//
// Offsets are 64-byte aligned. arena_bytes is where the highest slot ends; peak_bytes is the
// most bytes that can be live at once: every slot of its own, plus for each chain the largest
// sum of its shared registers live at one position. PlannedPeaks splits that peak by what
// the registers hold (memory_categories.h), for the memory report.
#include <vector>

#include "engine/compiler/memory_categories.h"
#include "engine/compiler/task_chains.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::compiler {

// The registers that live inside one of `chains` (by register id), whose bytes the chain's
// registers share; DecideSlotCounts (slot_counts.h) gives them one slot.
std::vector<bool> ChainResidentRegsts(const plan::Plan& plan, const std::vector<TaskChain>& chains);

// Replaces the plan's memory plans; `chains` must have been ordered (OrderChains) and the slot
// counts decided (DecideSlotCounts): a register inside a chain with more than one slot is a
// PlanError. It also decides which all_reduces sum in place (CollectiveDesc.in_place): those
// of a chain whose input only they read and whose output stays in the chain. Their input and
// output are one span at one offset: a gradient's all-reduce floating beside the backward pass
// then holds one buffer, not two, as Megatron's in-place reduction of its gradient buffer does.
void PlanMemory(plan::Plan& plan, const std::vector<TaskChain>& chains);

// Every device's peak_bytes (as PlanMemory planned them for a compiled `plan`) by category;
// each sums to the device's peak_bytes. The chains are found again in the compiled Plan: its
// added control registers follow their order, so FindTaskChains returns the same chains.
std::vector<CategoryBytes> PlannedPeaks(const plan::Plan& plan);

}  // namespace twinflow::compiler
