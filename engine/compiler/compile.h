#pragma once
// The compiler's front door: a LogicalGraph (with autograd and optimizer already appended)
// through the SBP search and lowering to an actor Plan, with the results of each pass kept
// for `explain`.
#include <string>
#include <vector>

#include "engine/compiler/lower.h"
#include "engine/compiler/sbp_search.h"

namespace twinflow::compiler {

struct CompileOptions {
  SbpSearchOptions search;
  LowerOptions lower;  // the fetched tensors (the loss), micro-batches and schedule
};

struct Compiled {
  SbpAssignment assignment;
  plan::Plan plan;
  // Why the Plan is not folded although LowerOptions::fold asked for it (FoldError's message).
  std::string fold_refused;
};

Compiled Compile(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                 const sbp::CostModel& cost_model, const CompileOptions& options);

// Compile's lowering of `assignment`, a search already run on `graph` (with another schedule
// or fold: the search reads neither), so that Plans differing only in those share it.
Compiled CompileSearched(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                         SbpAssignment assignment, const LowerOptions& options);

}  // namespace twinflow::compiler
