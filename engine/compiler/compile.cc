#include "engine/compiler/compile.h"

#include <utility>

#include "engine/plan/plan_validate.h"

namespace twinflow::compiler {

Compiled Compile(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                 const sbp::CostModel& cost_model, const CompileOptions& options) {
  graph.Validate(registry);
  return CompileSearched(graph, registry, SearchSbp(graph, registry, cost_model, options.search),
                         options.lower);
}

Compiled CompileSearched(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                         SbpAssignment assignment, const LowerOptions& options) {
  Compiled compiled;
  compiled.assignment = std::move(assignment);
  try {
    compiled.plan = LowerToPlan(graph, registry, compiled.assignment, options);
  } catch (const FoldError& e) {  // the graph lacks the symmetry: every device then
    compiled.fold_refused = e.message();
    LowerOptions every = options;
    every.fold = {};
    compiled.plan = LowerToPlan(graph, registry, compiled.assignment, every);
  }
  plan::ValidatePlan(compiled.plan);  // the compiler's own output must pass the loader's checks
  return compiled;
}

}  // namespace twinflow::compiler
