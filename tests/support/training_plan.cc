#include "tests/support/training_plan.h"

#include "engine/ops/builtin_ops.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "planner/lower_options.h"

namespace twinflow::testing {

const graph::OpRegistry& TrainingOps() {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  return registry;
}

models::BuiltModel BuildTrainingGpt(const std::string& strategy, const models::GptConfig& config,
                                    int64_t devices, const std::string& optimizer) {
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy(strategy);
  options.devices = devices;
  options.optimizer = graph::ParseOptimizer(optimizer);
  return models::BuildGpt(TrainingOps(), config, options);
}

compiler::CompileOptions TrainingCompileOptions(const models::BuiltModel& model) {
  compiler::CompileOptions compile;
  compile.lower = planner::StrategyLowerOptions(model.strategy);
  compile.lower.fetches = {model.loss};
  return compile;
}

plan::Plan CompileTraining(const models::BuiltModel& model,
                           const compiler::CompileOptions& options) {
  return compiler::Compile(model.graph, TrainingOps(), sbp::AlphaBetaCostModel(), options).plan;
}

plan::Plan CompileTraining(const models::BuiltModel& model) {
  return CompileTraining(model, TrainingCompileOptions(model));
}

}  // namespace twinflow::testing
