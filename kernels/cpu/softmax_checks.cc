// One definition of the softmax kernels' checks, for the CPU and CUDA kernels alike.
#include "kernels/cpu/softmax_checks.h"

#include <string>
#include <vector>

namespace twinflow::kernels {
namespace {

// Input 0 viewed around attr axis (default the last); it must have an axis.
AxisView AxisOf(const KernelContext& ctx, const char* op) {
  const Shape& shape = ctx.inputs[0]->shape();
  if (shape.rank() == 0) throw ShapeError(std::string(op) + ": input must have rank >= 1");
  return ViewAround(shape, KernelAxis(ctx.attrs.GetInt("axis", -1), shape.rank(), op));
}

}  // namespace

SoftmaxFusion FusionOf(const KernelContext& ctx, const AxisView& v, const char* op) {
  SoftmaxFusion f;
  f.scale = ctx.attrs.GetDouble("scale", 1.0);
  f.causal = ctx.attrs.GetBool("causal", false);
  if (!f.causal) return f;
  const Shape& shape = ctx.inputs[0]->shape();
  const int rank = shape.rank();
  if (v.inner != 1 || rank < 2 || shape[rank - 1] != shape[rank - 2]) {
    throw ShapeError(std::string(op) + ": causal softmax needs axis -1 of [..., S, S], got " +
                     shape.ToString());
  }
  f.query_rows = shape[rank - 2];
  return f;
}

AxisView CheckSoftmax(const KernelContext& ctx, const char* op) {
  CheckArity(ctx, 1, 1, op);
  const Tensor& x = *ctx.inputs[0];
  const Tensor& y = *ctx.outputs[0];
  CheckShape(y, x.shape(), op, "output");
  CheckDType(y, x.dtype(), op, "output");
  return AxisOf(ctx, op);
}

AxisView CheckSoftmaxGrad(const KernelContext& ctx, const char* op) {
  CheckArity(ctx, 2, 1, op);
  const Tensor& y = *ctx.inputs[0];
  const Tensor& dy = *ctx.inputs[1];
  const Tensor& dx = *ctx.outputs[0];
  CheckShape(dy, y.shape(), op, "dy");
  CheckShape(dx, y.shape(), op, "dx");
  CheckDType(dy, y.dtype(), op, "dy");
  CheckDType(dx, y.dtype(), op, "dx");
  return AxisOf(ctx, op);
}

XentRows CheckSparseXent(const KernelContext& ctx, bool grad, const char* op) {
  CheckArity(ctx, grad ? 3 : 2, 1, op);
  const Shape& logits = ctx.inputs[0]->shape();
  if (logits.rank() == 0) throw ShapeError(std::string(op) + ": logits must have rank >= 1");
  std::vector<int64_t> rows = logits.dims();
  const int64_t classes = rows.back();
  rows.pop_back();
  const Tensor& labels = *ctx.inputs[1];
  CheckShape(labels, Shape(rows), op, "labels");
  CheckIndexDType(labels, op, "labels");
  const Tensor& out = *ctx.outputs[0];
  CheckShape(out, grad ? logits : labels.shape(), op, "output");
  CheckDType(out, ctx.inputs[0]->dtype(), op, "output");
  if (grad) {
    CheckShape(*ctx.inputs[2], labels.shape(), op, "dloss");
    CheckDType(*ctx.inputs[2], ctx.inputs[0]->dtype(), op, "dloss");
  }
  return XentRows{Shape(rows).numel(), classes};
}

}  // namespace twinflow::kernels
