// Placeholder: the matmul kernels are being written.
#include "kernels/cpu/kernel_families.h"

namespace twinflow::kernels {
void RegisterMatmulKernels(KernelRegistry&) {}
}  // namespace twinflow::kernels
