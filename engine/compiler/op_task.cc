#include "engine/compiler/op_task.h"

#include "engine/core/error.h"

namespace twinflow::compiler {

plan::TaskKind TaskKindOf(graph::OpRole role) {
  switch (role) {
    case graph::OpRole::kInput:
      return plan::SOURCE;
    case graph::OpRole::kVariable:
      return plan::VARIABLE;
    case graph::OpRole::kAssign:
      return plan::ASSIGN;
    case graph::OpRole::kCompute:
    case graph::OpRole::kOptimizerUpdate:
    case graph::OpRole::kStepIncrement:
    case graph::OpRole::kGradientStatistic:
      break;
  }
  return plan::COMPUTE;
}

plan::KernelClass PlanKernelClass(graph::KernelClass kind) {
  switch (kind) {
    case graph::KernelClass::kStreaming:
      return plan::KERNEL_STREAMING;
    case graph::KernelClass::kActivation:
      return plan::KERNEL_ACTIVATION;
    case graph::KernelClass::kRowwise:
      return plan::KERNEL_ROWWISE;
    case graph::KernelClass::kGemm:
      return plan::KERNEL_GEMM;
    case graph::KernelClass::kAttention:
      return plan::KERNEL_ATTENTION;
  }
  throw PlanError("unknown kernel class");
}

}  // namespace twinflow::compiler
