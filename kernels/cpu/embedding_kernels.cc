// Placeholder: the embedding kernels are being written.
#include "kernels/cpu/kernel_families.h"

namespace twinflow::kernels {
void RegisterEmbeddingKernels(KernelRegistry&) {}
}  // namespace twinflow::kernels
