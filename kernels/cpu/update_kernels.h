#pragma once
// CPU kernels of the optimizer update ops; RegisterMiscKernels calls RegisterUpdateKernels.
// The layout of an update's inputs is shared with the CUDA host side.
#include <string>

#include "kernels/kernel.h"

namespace twinflow::kernels {

// Where an update's scalar inputs sit after its `count` tensors (engine/ops/update_ops.cc):
// the learning rate with attr lr_input, then, when present, the gradient factor; -1 for none.
struct UpdateScalars {
  int lr = -1;
  int factor = -1;
};
// Checks the arity (those inputs and `outputs` outputs; ShapeError naming `op`).
UpdateScalars CheckUpdateArity(const KernelContext& ctx, int count, int outputs,
                               const std::string& op);

void RegisterUpdateKernels(KernelRegistry& registry);

}  // namespace twinflow::kernels
