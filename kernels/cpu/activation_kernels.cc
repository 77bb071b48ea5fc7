// Placeholder: the activation kernels are being written.
#include "kernels/cpu/kernel_families.h"

namespace twinflow::kernels {
void RegisterActivationKernels(KernelRegistry&) {}
}  // namespace twinflow::kernels
