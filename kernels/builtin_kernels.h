#pragma once
// Every kernel this build has: the CPU kernels, and the CUDA kernels when it was built with
// CUDA. Executors take this registry, so a Plan's devices of either type find their kernels.
#include "kernels/kernel.h"

namespace twinflow::kernels {

KernelRegistry BuiltinKernels();
bool HaveCudaKernels();  // whether this build registered CUDA kernels

}  // namespace twinflow::kernels
