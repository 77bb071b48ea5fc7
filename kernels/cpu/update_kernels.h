#pragma once
// CPU kernels of the optimizer update ops; RegisterMiscKernels calls RegisterUpdateKernels.
#include "kernels/kernel.h"

namespace twinflow::kernels {

void RegisterUpdateKernels(KernelRegistry& registry);

}  // namespace twinflow::kernels
