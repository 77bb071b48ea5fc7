#include "kernels/cuda/cuda_kernels.h"

#include "kernels/cuda/cuda_kernel_families.h"

namespace twinflow::kernels {

void RegisterCudaKernels(KernelRegistry& registry) {
  cuda::RegisterMatmulCudaKernels(registry);
  cuda::RegisterElementwiseCudaKernels(registry);
  cuda::RegisterScalarCudaKernels(registry);
  cuda::RegisterActivationCudaKernels(registry);
  cuda::RegisterReductionCudaKernels(registry);
  cuda::RegisterSoftmaxCudaKernels(registry);
  cuda::RegisterClassSplitCudaKernels(registry);
  cuda::RegisterNormalizationCudaKernels(registry);
  cuda::RegisterEmbeddingCudaKernels(registry);
  cuda::RegisterShapeCudaKernels(registry);
  cuda::RegisterMiscCudaKernels(registry);
  cuda::RegisterUpdateCudaKernels(registry);
  cuda::RegisterFusedAttentionCudaKernels(registry);
  cuda::RegisterGradControlCudaKernels(registry);
}

}  // namespace twinflow::kernels
