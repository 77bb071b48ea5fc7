// CPU kernels of the class-split cross-entropy ops (engine/ops/sparse_xent_class_split_ops.cc).
// pick_label_logit and pick_label_logit_grad read where their class axis slice sits in the
// logical tensor, so that on a class split only the device owning a label's class touches it.
#include <cmath>
#include <vector>

#include "kernels/cpu/class_split_checks.h"
#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
namespace {

template <typename T>
void PickLabelLogit(const KernelContext& ctx) {
  const char* op = "pick_label_logit";
  const int64_t rows = CheckPickLabelLogit(ctx);
  const Tensor& logits = *ctx.inputs[0];
  const Tensor& labels = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
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
  const int64_t rows = CheckPickLabelLogitGrad(ctx);
  const Tensor& dy = *ctx.inputs[0];
  const Tensor& labels = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
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
  const int64_t rows = CheckClassSplitExp(ctx);
  const Tensor& logits = *ctx.inputs[0];
  const Tensor& m = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
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
  const int64_t rows = CheckClassSplitExpGrad(ctx);
  const Tensor& e = *ctx.inputs[0];
  const Tensor& dy = *ctx.inputs[1];
  Tensor& dlogits = *ctx.outputs[0];
  Tensor& dm = *ctx.outputs[1];
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
  CheckClassSplitLoss(ctx);
  const Shape& shape = ctx.inputs[0]->shape();
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
  CheckClassSplitLossGrad(ctx);
  const Shape& shape = ctx.inputs[0]->shape();
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
