#pragma once
// Lowering: a LogicalGraph with its SBP assignment becomes an actor Plan. One task per op and
// device (SOURCE for inputs, VARIABLE, ASSIGN, COMPUTE for the rest), one register per output
// and device, and every boxing the assignment needs turned into COLLECTIVE tasks (one per
// member device) and COPY tasks (local slices, send/recv pieces, broadcasts). Feeds, the
// fetched losses and the variables get Bindings; each device gets a memory plan.
//
// A variable is updated in place by its ASSIGN, so every other reader of the variable's
// register sends the ASSIGN a control register: the update waits until the step's last read.
//
// Micro-batches: ops run per micro-batch or per step (rates.h); REPEAT and ACC tasks join the
// two; each op's pipeline stage is its OpNode::stage, given when the graph was built.
//
// Order and memory: each device's tasks run in fixed chains (task_chains.h), 1F1B orders each
// stage's forward chain after its backward chain, and registers living inside a chain share
// bytes (plan_memory.h).
//
// Ranks: devices belong to ranks by LowerOptions::devices_per_rank; a copy from a device of
// another rank becomes a SEND there and a RECV here (lower_ranks.cc).
//
// Folding: with LowerOptions::fold only copy 0 of a data-parallel symmetry is lowered
// (plan_fold.h); collectives over groups spanning the copies keep copy 0's members. Anything
// that breaks the symmetry (a placement or shard shape that differs between copies, a copy
// between them) is a FoldError, and the caller lowers every device instead.
#include <functional>
#include <string>
#include <vector>

#include "engine/compiler/sbp_search.h"
#include "engine/core/error.h"
#include "engine/graph/logical_graph.h"
#include "engine/graph/op_registry.h"
#include "engine/parallel/strategy.h"
#include "engine/plan/plan.pb.h"
#include "engine/plan/plan_fold.h"
#include "engine/sbp/cost_model.h"

namespace twinflow::compiler {

struct LowerOptions {
  std::vector<graph::TensorId> fetches;  // tensors handed to the host each step (the loss)
  // Micro-batches per step: per-micro-batch registers get slots by the schedule, GPipe's
  // micro_batches (every forward before any backward) or 1F1B's (stages - stage), so stage s
  // keeps at most that many micro-batches' activations.
  int64_t micro_batches = 1;
  // The pipeline schedule (parallel/schedule.h). Under ZB-H1 the backward's weight gradients
  // are a pass of their own (PASS_WEIGHT), which each rank runs later, filling the pipeline's
  // drain (pipeline_schedule.h).
  parallel::Schedule schedule = parallel::Schedule::kOneFOneB;
  // Collectives float beside their device's chain (task_chains.h), so communication overlaps
  // computation; false keeps them in it (the Plan's serial_collectives), for less memory.
  bool overlap = true;
  // Gradient buckets (DDP's bucket_cap_mb, as bytes): the data-parallel all-reduces of
  // gradients smaller than this, of one comm group, dtype and stage, join into buckets of
  // about this size, each one COLLECTIVE over several tensors (lower_buckets.cc). 0: none.
  int64_t bucket_bytes = parallel::kDefaultBucketMib << 20;
  // Devices per MPI rank: device cpu:i belongs to rank i / devices_per_rank. 0 puts every
  // device on rank 0 (one process).
  int64_t devices_per_rank = 0;
  // Lower copy 0 of this data-parallel symmetry only (not folded by default): a Plan for the
  // simulator, whose cost no longer grows with the copies.
  plan::DeviceFold fold;
  // Called as the ops are lowered, with the ops done of all; it must not throw.
  std::function<void(int64_t done, int64_t total)> progress;
  // Stamp Plan.content_hash (a serialisation and digest of the whole Plan). A tune ranks
  // Plans it never saves or compares and leaves it empty (SavePlan stamps any Plan it writes).
  bool stamp_content_hash = true;
};

// The graph lacks the symmetry LowerOptions::fold names; the message says where.
class FoldError : public PlanError {
 public:
  explicit FoldError(const std::string& message) : PlanError("cannot fold: " + message) {}
};

// Throws SbpError/PlanError naming the op when the assignment does not fit the graph.
plan::Plan LowerToPlan(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                       const SbpAssignment& assignment, const LowerOptions& options);

}  // namespace twinflow::compiler
