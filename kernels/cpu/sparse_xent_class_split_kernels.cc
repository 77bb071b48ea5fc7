// CPU kernels of the class-split cross-entropy ops (engine/ops/sparse_xent_class_split_ops.cc).
// pick_label_logit and pick_label_logit_grad read where their class axis slice sits in the
// logical tensor, so that on a class split only the device owning a label's class touches it.
#include <cmath>
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

template <typename T>
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
  const int64_t width = logits.shape()[last];
  const int64_t classes = LogicalInputShape(ctx, 0)[last];
  const Range range = InputRange(ctx, 0, last);
  const T* x = logits.data<T>();
  T* o = out.data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t label = IndexAt(labels, r);
    CheckIndexValue(label, classes, op, "label");
    const bool mine = label >= range.begin && label < range.end && label - range.begin < width;
    o[r] = mine ? x[r * width + (label - range.begin)] : T(0);
  }
}

template <typename T>
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
  const int64_t width = out.shape()[last];
  const int64_t classes = ctx.attrs.GetInt("num_classes");
  const Range range = OutputRange(ctx, 0, last);
  out.Fill(0);
  const T* g = dy.data<T>();
  T* o = out.data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t label = IndexAt(labels, r);
    CheckIndexValue(label, classes, op, "label");
    if (label >= range.begin && label < range.end && label - range.begin < width) {
      o[r * width + (label - range.begin)] = g[r];
    }
  }
}

template <typename T>
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
  const int64_t width = logits.shape()[logits.shape().rank() - 1];
  const T* x = logits.data<T>();
  const T* ms = m.data<T>();
  T* o = out.data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; ++c) {
      o[r * width + c] = static_cast<T>(std::exp(static_cast<double>(x[r * width + c]) - ms[r]));
    }
  }
}

template <typename T>
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
  const int64_t width = e.shape()[e.shape().rank() - 1];
  const T* es = e.data<T>();
  const T* g = dy.data<T>();
  T* dl = dlogits.data<T>();
  T* dms = dm.data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    double acc = 0;
    for (int64_t c = 0; c < width; ++c) {
      const double v = static_cast<double>(g[r * width + c]) * es[r * width + c];
      dl[r * width + c] = static_cast<T>(v);
      acc += v;
    }
    dms[r] = static_cast<T>(-acc);
  }
}

template <typename T>
void ClassSplitLoss(const KernelContext& ctx) {
  const char* op = "sparse_xent_class_split_loss";
  CheckArity(ctx, 3, 1, op);
  const Shape& shape = ctx.inputs[0]->shape();
  for (const Tensor* t :
       {ctx.inputs[1], ctx.inputs[2], static_cast<const Tensor*>(ctx.outputs[0])}) {
    CheckShape(*t, shape, op, "every tensor");
    CheckDType(*t, ctx.inputs[0]->dtype(), op, "every tensor");
  }
  const T* s = ctx.inputs[0]->data<T>();
  const T* m = ctx.inputs[1]->data<T>();
  const T* picked = ctx.inputs[2]->data<T>();
  T* o = ctx.outputs[0]->data<T>();
  for (int64_t i = 0, end = shape.numel(); i < end; ++i) {
    o[i] = static_cast<T>(std::log(static_cast<double>(s[i])) + m[i] - picked[i]);
  }
}

template <typename T>
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
  const T* s = ctx.inputs[0]->data<T>();
  const T* g = ctx.inputs[1]->data<T>();
  T* ds = ctx.outputs[0]->data<T>();
  T* dm = ctx.outputs[1]->data<T>();
  T* dpicked = ctx.outputs[2]->data<T>();
  for (int64_t i = 0, end = shape.numel(); i < end; ++i) {
    ds[i] = g[i] / s[i];
    dm[i] = g[i];
    dpicked[i] = -g[i];
  }
}

template <typename T>
void RegisterFor(KernelRegistry& registry, DType dtype) {
  registry.Register({"pick_label_logit", DeviceType::kCpu, dtype}, PickLabelLogit<T>);
  registry.Register({"pick_label_logit_grad", DeviceType::kCpu, dtype}, PickLabelLogitGrad<T>);
  registry.Register({"sparse_xent_class_split_exp", DeviceType::kCpu, dtype}, ClassSplitExp<T>);
  registry.Register({"sparse_xent_class_split_exp_grad", DeviceType::kCpu, dtype},
                    ClassSplitExpGrad<T>);
  registry.Register({"sparse_xent_class_split_loss", DeviceType::kCpu, dtype}, ClassSplitLoss<T>);
  registry.Register({"sparse_xent_class_split_loss_grad", DeviceType::kCpu, dtype},
                    ClassSplitLossGrad<T>);
}

}  // namespace

void RegisterSparseXentClassSplitKernels(KernelRegistry& registry) {
  RegisterFor<float>(registry, DType::kF32);
  RegisterFor<double>(registry, DType::kF64);
}

}  // namespace twinflow::kernels
