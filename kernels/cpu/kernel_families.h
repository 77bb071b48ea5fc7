#pragma once
// The Register*Kernels function of each CPU kernel file; CpuKernels() calls them all.
#include "kernels/kernel.h"

namespace twinflow::kernels {

void RegisterMatmulKernels(KernelRegistry& registry);       // matmul_kernels.cc
void RegisterElementwiseKernels(KernelRegistry& registry);  // elementwise_kernels.cc
void RegisterActivationKernels(KernelRegistry& registry);   // activation_kernels.cc
void RegisterReductionKernels(KernelRegistry& registry);    // reduction_kernels.cc
void RegisterSoftmaxKernels(KernelRegistry& registry);      // softmax_kernels.cc
// sparse_xent_class_split_kernels.cc; called by RegisterSoftmaxKernels.
void RegisterSparseXentClassSplitKernels(KernelRegistry& registry);
void RegisterNormalizationKernels(KernelRegistry& registry);   // normalization_kernels.cc
void RegisterEmbeddingKernels(KernelRegistry& registry);       // embedding_kernels.cc
void RegisterShapeKernels(KernelRegistry& registry);           // shape_kernels.cc
void RegisterMiscKernels(KernelRegistry& registry);            // misc_kernels.cc
void RegisterFusedAttentionKernels(KernelRegistry& registry);  // fused_attention_kernels.cc
void RegisterGradControlKernels(KernelRegistry& registry);     // grad_control_kernels.cc
// widened_kernels.cc: bf16 and f16 versions of the f32 kernels registered so far; call last.
void RegisterWidenedKernels(KernelRegistry& registry);

}  // namespace twinflow::kernels
