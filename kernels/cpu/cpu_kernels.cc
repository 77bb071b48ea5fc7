#include "kernels/cpu/cpu_kernels.h"

#include "kernels/cpu/kernel_families.h"

namespace twinflow::kernels {

KernelRegistry CpuKernels() {
  KernelRegistry registry;
  RegisterMatmulKernels(registry);
  RegisterElementwiseKernels(registry);
  RegisterActivationKernels(registry);
  RegisterReductionKernels(registry);
  RegisterSoftmaxKernels(registry);
  RegisterNormalizationKernels(registry);
  RegisterEmbeddingKernels(registry);
  RegisterShapeKernels(registry);
  RegisterMiscKernels(registry);
  RegisterFusedAttentionKernels(registry);
  RegisterGradControlKernels(registry);
  RegisterWidenedKernels(registry);
  return registry;
}

}  // namespace twinflow::kernels
