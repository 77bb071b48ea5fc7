#include "engine/compiler/kernel_class.h"

#include "engine/core/error.h"

namespace twinflow::compiler {

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
