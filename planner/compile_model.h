#pragma once
// A built model compiled to a Plan as every front end compiles it: the lowering options its
// strategy asks for (lower_options.h), its loss fetched (or the fetches given), under a cost
// model's search, optionally folded and optionally reusing a search already run.
#include <functional>
#include <vector>

#include "engine/compiler/compile.h"
#include "engine/graph/op_registry.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::planner {

struct ModelCompileOptions {
  compiler::SbpSearchOptions search;     // method, memory limit, progress, shared boxing times
  std::vector<graph::TensorId> fetches;  // empty: the model's loss
  int64_t devices_per_rank = 0;          // 0: every device on rank 0
  plan::DeviceFold fold;                 // lowered folded where the graph has this symmetry
  // A search already run on the same model (for another schedule): lowered without searching.
  // Not kept past the call.
  const compiler::SbpAssignment* searched = nullptr;
  bool stamp_hash = true;  // LowerOptions::stamp_content_hash
  std::function<void(int64_t, int64_t)> lower_progress;
};

compiler::Compiled CompileModel(const models::BuiltModel& model, const graph::OpRegistry& registry,
                                const sbp::AlphaBetaConfig& cost,
                                const ModelCompileOptions& options);

// How a Plan for the simulator is folded (folds.h): by its data-parallel copies that sit alike
// on the nodes (the default, exact), by every replica (--replica, approximate), or not at all
// (--no-fold, a Chakra export, a shared GPU).
enum class FoldMode { kDataParallel, kReplica, kNone };

// The fold of `strategy` on `spec` under `mode`; none on a CPU host, whose cores the copies
// would share.
plan::DeviceFold SimulationFold(FoldMode mode, const parallel::Strategy& strategy,
                                const sim::ClusterSpec& spec);

}  // namespace twinflow::planner
