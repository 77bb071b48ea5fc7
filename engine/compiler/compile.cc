#include "engine/compiler/compile.h"

#include "engine/plan/plan_validate.h"

namespace twinflow::compiler {

Compiled Compile(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                 const sbp::CostModel& cost_model, const CompileOptions& options) {
  graph.Validate(registry);
  Compiled compiled;
  compiled.assignment = SearchSbp(graph, registry, cost_model, options.search);
  try {
    compiled.plan = LowerToPlan(graph, registry, compiled.assignment, options.lower);
  } catch (const FoldError& e) {  // the graph lacks the symmetry: every device then
    compiled.fold_refused = e.message();
    LowerOptions every = options.lower;
    every.fold = {};
    compiled.plan = LowerToPlan(graph, registry, compiled.assignment, every);
  }
  plan::ValidatePlan(compiled.plan);  // the compiler's own output must pass the loader's checks
  return compiled;
}

}  // namespace twinflow::compiler
