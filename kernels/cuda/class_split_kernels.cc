// Host side of the CUDA class-split cross-entropy ops. pick_label_logit(_grad) read where
// their class slice sits in the logical row, as on the CPU; labels are checked on the device.
#include "kernels/cuda/class_split_launch.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/device_fault.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/softmax_launch.h"

namespace twinflow::kernels::cuda {
namespace {

// Rows of a [rows..., C] tensor whose leading shape is `rows_shape`; throws unless it matches.
int64_t CheckRows(const char* op, const char* role, const Tensor& t, const Shape& rows_shape) {
  if (t.shape().rank() != rows_shape.rank() + 1) {
    throw ShapeError(std::string(op) + ": " + role + " has shape " + t.shape().ToString() +
                     ", expected rank " + std::to_string(rows_shape.rank() + 1));
  }
  std::vector<int64_t> dims = t.shape().dims();
  dims.pop_back();
  CheckShape(Shape(dims), rows_shape, op, role);
  return rows_shape.numel();
}

LabelSlice Slice(const Tensor& labels, Range range, int64_t width) {
  return LabelSlice{labels.raw(), labels.dtype() == DType::kI64, range.begin, range.end, width};
}

void PickLabelLogit(const KernelContext& ctx) {
  const char* op = "pick_label_logit";
  CheckArity(ctx, 2, 1, op);
  const Tensor& logits = *ctx.inputs[0];
  const Tensor& labels = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  CheckIndexDType(labels, op, "labels");
  const int64_t rows = CheckRows(op, "logits", logits, labels.shape());
  CheckShape(out, labels.shape(), op, "output");
  CheckDType(out, logits.dtype(), op, "output");
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
  CheckArity(ctx, 2, 1, op);
  const Tensor& dy = *ctx.inputs[0];
  const Tensor& labels = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  CheckIndexDType(labels, op, "labels");
  CheckShape(labels, dy.shape(), op, "labels");
  const int64_t rows = CheckRows(op, "output", out, dy.shape());
  CheckDType(out, dy.dtype(), op, "output");
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
  CheckArity(ctx, 2, 1, op);
  const Tensor& logits = *ctx.inputs[0];
  const Tensor& m = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  const int64_t rows = CheckRows(op, "logits", logits, m.shape());
  CheckShape(out, logits.shape(), op, "output");
  CheckDType(m, logits.dtype(), op, "max");
  CheckDType(out, logits.dtype(), op, "output");
  LaunchClassSplitExp(logits.dtype(), logits.raw(), m.raw(), out.raw(), rows,
                      logits.shape()[logits.shape().rank() - 1], Env(ctx, op).stream);
}

void ClassSplitExpGrad(const KernelContext& ctx) {
  const char* op = "sparse_xent_class_split_exp_grad";
  CheckArity(ctx, 2, 2, op);
  const Tensor& e = *ctx.inputs[0];
  const Tensor& dy = *ctx.inputs[1];
  Tensor& dlogits = *ctx.outputs[0];
  Tensor& dm = *ctx.outputs[1];
  CheckShape(dy, e.shape(), op, "dy");
  CheckShape(dlogits, e.shape(), op, "dlogits");
  const int64_t rows = CheckRows(op, "e", e, dm.shape());
  for (const Tensor* t :
       {&dy, static_cast<const Tensor*>(&dlogits), static_cast<const Tensor*>(&dm)}) {
    CheckDType(*t, e.dtype(), op, "every tensor");
  }
  LaunchClassSplitExpGrad(e.dtype(), e.raw(), dy.raw(), dlogits.raw(), dm.raw(), rows,
                          e.shape()[e.shape().rank() - 1], Env(ctx, op).stream);
}

void ClassSplitLoss(const KernelContext& ctx) {
  const char* op = "sparse_xent_class_split_loss";
  CheckArity(ctx, 3, 1, op);
  const Shape& shape = ctx.inputs[0]->shape();
  for (const Tensor* t :
       {ctx.inputs[1], ctx.inputs[2], static_cast<const Tensor*>(ctx.outputs[0])}) {
    CheckShape(*t, shape, op, "every tensor");
    CheckDType(*t, ctx.inputs[0]->dtype(), op, "every tensor");
  }
  LaunchClassSplitLoss(ctx.inputs[0]->dtype(), ctx.inputs[0]->raw(), ctx.inputs[1]->raw(),
                       ctx.inputs[2]->raw(), ctx.outputs[0]->raw(), shape.numel(),
                       Env(ctx, op).stream);
}

void ClassSplitLossGrad(const KernelContext& ctx) {
  const char* op = "sparse_xent_class_split_loss_grad";
  CheckArity(ctx, 2, 3, op);
  const Shape& shape = ctx.inputs[0]->shape();
  CheckShape(*ctx.inputs[1], shape, op, "dy");
  CheckDType(*ctx.inputs[1], ctx.inputs[0]->dtype(), op, "dy");
  for (const Tensor* t : ctx.outputs) {
    CheckShape(*t, shape, op, "every output");
    CheckDType(*t, ctx.inputs[0]->dtype(), op, "every output");
  }
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
