// Placeholder: the shape kernels are being written.
#include "kernels/cpu/kernel_families.h"

namespace twinflow::kernels {
void RegisterShapeKernels(KernelRegistry&) {}
}  // namespace twinflow::kernels
