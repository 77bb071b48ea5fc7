#pragma once
// The Register*CudaKernels function of each CUDA kernel family (host .cc files); the public
// RegisterCudaKernels (cuda_kernels.h) calls them all.
#include "kernels/kernel.h"

namespace twinflow::kernels::cuda {

void RegisterMatmulCudaKernels(KernelRegistry& registry);          // matmul_kernels.cc
void RegisterElementwiseCudaKernels(KernelRegistry& registry);     // elementwise_kernels.cc
void RegisterScalarCudaKernels(KernelRegistry& registry);          // scalar_kernels.cc
void RegisterActivationCudaKernels(KernelRegistry& registry);      // activation_kernels.cc
void RegisterReductionCudaKernels(KernelRegistry& registry);       // reduction_kernels.cc
void RegisterSoftmaxCudaKernels(KernelRegistry& registry);         // softmax_kernels.cc
void RegisterClassSplitCudaKernels(KernelRegistry& registry);      // class_split_kernels.cc
void RegisterNormalizationCudaKernels(KernelRegistry& registry);   // normalization_kernels.cc
void RegisterEmbeddingCudaKernels(KernelRegistry& registry);       // embedding_kernels.cc
void RegisterShapeCudaKernels(KernelRegistry& registry);           // shape_kernels.cc
void RegisterMiscCudaKernels(KernelRegistry& registry);            // misc_kernels.cc
void RegisterUpdateCudaKernels(KernelRegistry& registry);          // update_kernels.cc
void RegisterFusedAttentionCudaKernels(KernelRegistry& registry);  // fused_attention_kernels.cc
void RegisterGradControlCudaKernels(KernelRegistry& registry);     // grad_control_kernels.cc

}  // namespace twinflow::kernels::cuda
