#pragma once
// What an op becomes in the Plan, as the lowering writes it: its task kind (from its role) and
// its kernel class; the simulator's step bound reads the same of the graph.
#include "engine/graph/op_def.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::compiler {

plan::TaskKind TaskKindOf(graph::OpRole role);
plan::KernelClass PlanKernelClass(graph::KernelClass kind);

}  // namespace twinflow::compiler
