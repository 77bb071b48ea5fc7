// One definition of the class-split kernels' checks, for the CPU and CUDA kernels alike.
#include "kernels/cpu/class_split_checks.h"

#include <string>
#include <vector>

#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
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

}  // namespace

int64_t CheckPickLabelLogit(const KernelContext& ctx) {
  const char* op = "pick_label_logit";
  CheckArity(ctx, 2, 1, op);
  const Tensor& logits = *ctx.inputs[0];
  const Tensor& labels = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  CheckIndexDType(labels, op, "labels");
  const int64_t rows = CheckRows(op, "logits", logits, labels.shape());
  CheckShape(out, labels.shape(), op, "output");
  CheckDType(out, logits.dtype(), op, "output");
  return rows;
}

int64_t CheckPickLabelLogitGrad(const KernelContext& ctx) {
  const char* op = "pick_label_logit_grad";
  CheckArity(ctx, 2, 1, op);
  const Tensor& dy = *ctx.inputs[0];
  const Tensor& labels = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  CheckIndexDType(labels, op, "labels");
  CheckShape(labels, dy.shape(), op, "labels");
  const int64_t rows = CheckRows(op, "output", out, dy.shape());
  CheckDType(out, dy.dtype(), op, "output");
  return rows;
}

int64_t CheckClassSplitExp(const KernelContext& ctx) {
  const char* op = "sparse_xent_class_split_exp";
  CheckArity(ctx, 2, 1, op);
  const Tensor& logits = *ctx.inputs[0];
  const Tensor& m = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  const int64_t rows = CheckRows(op, "logits", logits, m.shape());
  CheckShape(out, logits.shape(), op, "output");
  CheckDType(m, logits.dtype(), op, "max");
  CheckDType(out, logits.dtype(), op, "output");
  return rows;
}

int64_t CheckClassSplitExpGrad(const KernelContext& ctx) {
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
  return rows;
}

void CheckClassSplitLoss(const KernelContext& ctx) {
  const char* op = "sparse_xent_class_split_loss";
  CheckArity(ctx, 3, 1, op);
  const Shape& shape = ctx.inputs[0]->shape();
  for (const Tensor* t :
       {ctx.inputs[1], ctx.inputs[2], static_cast<const Tensor*>(ctx.outputs[0])}) {
    CheckShape(*t, shape, op, "every tensor");
    CheckDType(*t, ctx.inputs[0]->dtype(), op, "every tensor");
  }
}

void CheckClassSplitLossGrad(const KernelContext& ctx) {
  const char* op = "sparse_xent_class_split_loss_grad";
  CheckArity(ctx, 2, 3, op);
  const Shape& shape = ctx.inputs[0]->shape();
  CheckShape(*ctx.inputs[1], shape, op, "dy");
  CheckDType(*ctx.inputs[1], ctx.inputs[0]->dtype(), op, "dy");
  for (const Tensor* t : ctx.outputs) {
    CheckShape(*t, shape, op, "every output");
    CheckDType(*t, ctx.inputs[0]->dtype(), op, "every output");
  }
}

}  // namespace twinflow::kernels
