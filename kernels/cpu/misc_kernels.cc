// Placeholder: the misc kernels are being written.
#include "kernels/cpu/kernel_families.h"

namespace twinflow::kernels {
void RegisterMiscKernels(KernelRegistry&) {}
}  // namespace twinflow::kernels
