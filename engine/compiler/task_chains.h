#pragma once
// Task chains: the compiler's per-device execution order. A chain is the tasks of one device
// that act at one rate in one phase of the step (forward: what a fetched value depends on;
// backward: the rest, optimizer updates and ASSIGNs included; with one micro-batch per step
// both phases are one chain), listed in one global topological order, so that the chains of
// all devices agree with each other (collectives meet in the same order).
//
// OrderChains makes a chain run strictly in that order, one piece at a time: a control
// register from each task to the next, and one from the last task to the first with lag 1.
// Registers that live inside a serial chain are then live over a fixed span of its positions,
// which is what lets the memory planner (plan_memory.h) give them shared bytes; the pipeline
// schedule (1F1B) orders whole chains against each other.
//
// Collectives float beside the chain rather than in it, wherever everything they write is read
// inside the chain (by a serial task, or by another floating collective). A floating
// collective starts once its inputs exist, after serial position `after` (its latest producer
// in the chain), and must finish before serial position `before` (its first reader there, or
// its floating readers' `before`), which waits for it through a data register. Between the two
// the chain goes on computing: this is how a gradient's all-reduce overlaps the rest of the
// backward pass, as DDP's buckets do, instead of stalling the device until every rank has
// caught up. Its registers are still live over a fixed span of positions, so they share bytes
// as before. A collective whose output leaves the chain stays serial.
//
// Why the added edges cannot deadlock a Plan that did not already: give micro-batch p the
// time p, a step value the step's micro-batches read (through a REPEAT) the time just before
// the step's first micro-batch, and any other step value the time just after its last. Every
// register, slot reuse and lag then points forward in time or, at equal times, forward in the
// topological order; chains join tasks of equal time, in that order, and their lag-1 edge
// points forward in time. A Plan with a step value that both depends on an ACC and feeds a
// REPEAT, or with a lagged register of fewer slots than its lag (its producer waits for a
// later act of its consumer), has no such times; it gets no chains. The compiler makes
// neither.
#include <cstdint>
#include <vector>

#include "engine/plan/plan.pb.h"

namespace twinflow::compiler {

// A collective running beside a chain, between two of its serial positions (see above).
struct FloatingTask {
  int64_t task = 0;
  int64_t after = -1;  // the serial position it follows (-1: it reads nothing of the chain)
  int64_t before = 0;  // the serial position that waits for it
};

struct TaskChain {
  int32_t device = 0;
  int32_t stage = 0;  // the pipeline stage (an interleaved pipeline has several per device)
  int64_t acts_per_step = 1;
  bool forward = false;        // the forward phase alone (only with several micro-batches)
  bool weight = false;         // the backward's weight gradients alone (PASS_WEIGHT, zero-bubble)
  std::vector<int64_t> tasks;  // the serial tasks, in execution order
  std::vector<FloatingTask> floating;  // in topological order
};

// The chains of COMPUTE, COPY, COLLECTIVE and ASSIGN tasks, by device, then stage, then
// backward before forward, then rate; chains of one serial task are left out (there is nothing to
// order). Empty for a Plan without consistent times (above).
std::vector<TaskChain> FindTaskChains(const plan::Plan& plan);

// A control register (no bytes) from `from` to `to`: to's act p waits for from's act p - lag.
// Its slots, max(1, lag), are decided with every other register's (slot_counts.h).
int64_t AddControlRegst(plan::Plan& plan, int64_t from, int64_t to, int32_t lag);

// Serialises every chain as described above; a step already implied by a register of lag 0
// between neighbours gets no new one.
void OrderChains(plan::Plan& plan, const std::vector<TaskChain>& chains);

}  // namespace twinflow::compiler
