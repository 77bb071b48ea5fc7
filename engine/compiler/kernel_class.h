#pragma once
// The Plan's kernel class of an op's (graph::KernelClass), as the lowering writes it into each
// task and the simulator's step bound reads it from the graph.
#include "engine/graph/op_def.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::compiler {

plan::KernelClass PlanKernelClass(graph::KernelClass kind);

}  // namespace twinflow::compiler
