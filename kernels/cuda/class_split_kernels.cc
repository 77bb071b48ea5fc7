// Host side of the CUDA class-split cross-entropy ops. pick_label_logit(_grad) read where
// their class slice sits in the logical row, as on the CPU; labels are checked on the device.
#include "kernels/cpu/class_split_checks.h"
#include "kernels/cuda/class_split_launch.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/device_fault.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/softmax_launch.h"

namespace twinflow::kernels::cuda {
namespace {

LabelSlice Slice(const Tensor& labels, Range range, int64_t width) {
  return LabelSlice{labels.raw(), labels.dtype() == DType::kI64, range.begin, range.end, width};
}

void PickLabelLogit(const KernelContext& ctx) {
  const char* op = "pick_label_logit";
  const int64_t rows = CheckPickLabelLogit(ctx);
  const Tensor& logits = *ctx.inputs[0];
  const Tensor& labels = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  const int last = logits.shape().rank() - 1;
  const CudaEnv& env = Env(ctx, op);
  LaunchCheckIndices(labels.raw(), labels.dtype() == DType::kI64, rows,
                     LogicalInputShape(ctx, 0)[last], env.error_flag, kPickLabelOutOfRange,
                     env.stream);
  LaunchPickLabel(logits.dtype(), logits.raw(),
                  Slice(labels, InputRange(ctx, 0, last), logits.shape()[last]), out.raw(), rows,
                  env.stream);
}

void PickLabelLogitGrad(const KernelContext& ctx) {
  const char* op = "pick_label_logit_grad";
  const int64_t rows = CheckPickLabelLogitGrad(ctx);
  const Tensor& dy = *ctx.inputs[0];
  const Tensor& labels = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  const int last = out.shape().rank() - 1;
  const CudaEnv& env = Env(ctx, op);
  LaunchCheckIndices(labels.raw(), labels.dtype() == DType::kI64, rows,
                     ctx.attrs.GetInt("num_classes"), env.error_flag, kPickLabelGradOutOfRange,
                     env.stream);
  LaunchPickLabelGrad(dy.dtype(), dy.raw(),
                      Slice(labels, OutputRange(ctx, 0, last), out.shape()[last]), out.raw(), rows,
                      env.stream);
}

void ClassSplitExp(const KernelContext& ctx) {
  const char* op = "sparse_xent_class_split_exp";
  const int64_t rows = CheckClassSplitExp(ctx);
  const Tensor& logits = *ctx.inputs[0];
  const Tensor& m = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  LaunchClassSplitExp(logits.dtype(), logits.raw(), m.raw(), out.raw(), rows,
                      logits.shape()[logits.shape().rank() - 1], Env(ctx, op).stream);
}

void ClassSplitExpGrad(const KernelContext& ctx) {
  const char* op = "sparse_xent_class_split_exp_grad";
  const int64_t rows = CheckClassSplitExpGrad(ctx);
  const Tensor& e = *ctx.inputs[0];
  const Tensor& dy = *ctx.inputs[1];
  Tensor& dlogits = *ctx.outputs[0];
  Tensor& dm = *ctx.outputs[1];
  LaunchClassSplitExpGrad(e.dtype(), e.raw(), dy.raw(), dlogits.raw(), dm.raw(), rows,
                          e.shape()[e.shape().rank() - 1], Env(ctx, op).stream);
}

void ClassSplitLoss(const KernelContext& ctx) {
  const char* op = "sparse_xent_class_split_loss";
  CheckClassSplitLoss(ctx);
  const Shape& shape = ctx.inputs[0]->shape();
  LaunchClassSplitLoss(ctx.inputs[0]->dtype(), ctx.inputs[0]->raw(), ctx.inputs[1]->raw(),
                       ctx.inputs[2]->raw(), ctx.outputs[0]->raw(), shape.numel(),
                       Env(ctx, op).stream);
}

void ClassSplitLossGrad(const KernelContext& ctx) {
  const char* op = "sparse_xent_class_split_loss_grad";
  CheckClassSplitLossGrad(ctx);
  const Shape& shape = ctx.inputs[0]->shape();
  LaunchClassSplitLossGrad(ctx.inputs[0]->dtype(), ctx.inputs[0]->raw(), ctx.inputs[1]->raw(),
                           ctx.outputs[0]->raw(), ctx.outputs[1]->raw(), ctx.outputs[2]->raw(),
                           shape.numel(), Env(ctx, op).stream);
}

}  // namespace

void RegisterClassSplitCudaKernels(KernelRegistry& registry) {
  const auto floats = {DType::kF32, DType::kBF16};
  RegisterCuda(registry, "pick_label_logit", floats, PickLabelLogit);
  RegisterCuda(registry, "pick_label_logit_grad", floats, PickLabelLogitGrad);
  RegisterCuda(registry, "sparse_xent_class_split_exp", floats, ClassSplitExp);
  RegisterCuda(registry, "sparse_xent_class_split_exp_grad", floats, ClassSplitExpGrad);
  RegisterCuda(registry, "sparse_xent_class_split_loss", floats, ClassSplitLoss);
  RegisterCuda(registry, "sparse_xent_class_split_loss_grad", floats, ClassSplitLossGrad);
}

}  // namespace twinflow::kernels::cuda
