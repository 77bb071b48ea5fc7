#include "planner/compile_model.h"

#include "planner/folds.h"
#include "planner/lower_options.h"

namespace twinflow::planner {

compiler::Compiled CompileModel(const models::BuiltModel& model, const graph::OpRegistry& registry,
                                const sbp::AlphaBetaConfig& cost,
                                const ModelCompileOptions& options) {
  compiler::CompileOptions compile;
  compile.search = options.search;
  compile.lower = StrategyLowerOptions(model.strategy);
  compile.lower.fetches =
      options.fetches.empty() ? std::vector<graph::TensorId>{model.loss} : options.fetches;
  compile.lower.devices_per_rank = options.devices_per_rank;
  compile.lower.fold = options.fold;
  compile.lower.stamp_content_hash = options.stamp_hash;
  compile.lower.progress = options.lower_progress;
  if (options.searched) {
    return compiler::CompileSearched(model.graph, registry, *options.searched, compile.lower);
  }
  return compiler::Compile(model.graph, registry, sbp::AlphaBetaCostModel(cost), compile);
}

plan::DeviceFold SimulationFold(FoldMode mode, const parallel::Strategy& strategy,
                                const sim::ClusterSpec& spec) {
  if (mode == FoldMode::kNone || spec.cores_per_node() > 0) return {};
  if (mode == FoldMode::kReplica) return ReplicaFold(strategy);
  return DataParallelFold(strategy, spec.devices_per_node());
}

}  // namespace twinflow::planner
