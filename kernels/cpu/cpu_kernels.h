#pragma once
// Every CPU kernel, registered into one registry. Each op family's kernels live in their own
// file (matmul_kernels.cc, elementwise_kernels.cc, ...) with a Register*Kernels function.
#include "kernels/kernel.h"

namespace twinflow::kernels {

KernelRegistry CpuKernels();

}  // namespace twinflow::kernels
