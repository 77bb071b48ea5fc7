#pragma once
// Argument checks of the class-split cross-entropy kernels (engine/ops/
// sparse_xent_class_split_ops.cc), shared by the CPU kernels and the CUDA host side so both
// devices accept the same tensors and throw the same errors.
#include <cstdint>

#include "kernels/kernel.h"

namespace twinflow::kernels {

// pick_label_logit(logits [rows..., C], labels [rows...]) -> [rows...]; returns the row count.
int64_t CheckPickLabelLogit(const KernelContext& ctx);
// pick_label_logit_grad(dy [rows...], labels [rows...]) -> [rows..., C]; returns the row count.
int64_t CheckPickLabelLogitGrad(const KernelContext& ctx);
// sparse_xent_class_split_exp(logits [rows..., C], max [rows...]); returns the row count.
int64_t CheckClassSplitExp(const KernelContext& ctx);
// sparse_xent_class_split_exp_grad(e, dy) -> (dlogits, dm); returns the row count.
int64_t CheckClassSplitExpGrad(const KernelContext& ctx);
// sparse_xent_class_split_loss(sum, max, picked): three inputs and the output of one shape.
void CheckClassSplitLoss(const KernelContext& ctx);
// sparse_xent_class_split_loss_grad(sum, dy) -> (dsum, dmax, dpicked), all of one shape.
void CheckClassSplitLossGrad(const KernelContext& ctx);

}  // namespace twinflow::kernels
