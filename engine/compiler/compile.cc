#include "engine/compiler/compile.h"

#include "engine/plan/plan_validate.h"

namespace twinflow::compiler {

Compiled Compile(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                 const sbp::CostModel& cost_model, const CompileOptions& options) {
  graph.Validate(registry);
  Compiled compiled;
  compiled.assignment = SearchSbp(graph, registry, cost_model, options.search);
  compiled.plan = LowerToPlan(graph, registry, compiled.assignment, options.lower);
  plan::ValidatePlan(compiled.plan);  // the compiler's own output must pass the loader's checks
  return compiled;
}

}  // namespace twinflow::compiler
