// One definition of the shape kernels' checks, for the CPU and CUDA kernels alike.
#include "kernels/cpu/shape_checks.h"

#include <string>

#include "engine/core/error.h"

namespace twinflow::kernels {
namespace {

std::string Ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

void CheckShapeOpArity(const KernelContext& ctx, size_t inputs, size_t outputs, const char* op) {
  if (ctx.inputs.size() != inputs || ctx.outputs.size() != outputs) {
    throw InvalidArgumentError(std::string("kernel '") + op + "' got " +
                               std::to_string(ctx.inputs.size()) + " inputs and " +
                               std::to_string(ctx.outputs.size()) + " outputs");
  }
}

void CheckReshape(const KernelContext& ctx) {
  CheckShapeOpArity(ctx, 1, 1, "reshape");
  const Tensor& in = *ctx.inputs[0];
  const Tensor& out = *ctx.outputs[0];
  if (in.numel() != out.numel() || in.dtype() != out.dtype()) {
    throw ShapeError("kernel 'reshape': cannot reshape " + in.shape().ToString() + " into " +
                     out.shape().ToString());
  }
}

const std::vector<int64_t>& CheckTranspose(const KernelContext& ctx) {
  CheckShapeOpArity(ctx, 1, 1, "transpose");
  const Tensor& in = *ctx.inputs[0];
  const Tensor& out = *ctx.outputs[0];
  const std::vector<int64_t>& perm = ctx.attrs.GetInts("perm");
  const int rank = in.shape().rank();
  bool ok = static_cast<int>(perm.size()) == rank && out.shape().rank() == rank &&
            in.dtype() == out.dtype();
  for (int i = 0; ok && i < rank; ++i) {
    ok = perm[i] >= 0 && perm[i] < rank && out.shape()[i] == in.shape()[static_cast<int>(perm[i])];
  }
  if (!ok) {
    throw ShapeError("kernel 'transpose': perm " + Ints(perm) + " does not map " +
                     in.shape().ToString() + " to " + out.shape().ToString());
  }
  return perm;
}

Region CheckBox(const std::vector<int64_t>& begin, const Shape& shape, const Shape& outer,
                const char* op, bool same_dtype) {
  Region r;
  bool ok =
      static_cast<int>(begin.size()) == shape.rank() && shape.rank() == outer.rank() && same_dtype;
  for (int i = 0; ok && i < shape.rank(); ++i) {
    ok = begin[i] >= 0 && begin[i] + shape[i] <= outer[i];
    r.ranges.push_back(Range{begin[i], begin[i] + shape[i]});
  }
  if (!ok) {
    throw ShapeError(std::string("kernel '") + op + "': a box of " + shape.ToString() + " at " +
                     Ints(begin) + " does not fit in " + outer.ToString());
  }
  return r;
}

int64_t CheckConcatAxis(const KernelContext& ctx) {
  if (ctx.outputs.size() != 1 || ctx.inputs.empty()) CheckShapeOpArity(ctx, 1, 1, "concat");
  const Tensor& out = *ctx.outputs[0];
  const int64_t axis = ctx.attrs.GetInt("axis");
  if (axis < 0 || axis >= out.shape().rank()) {
    throw ShapeError("kernel 'concat': axis " + std::to_string(axis) + " is out of range for " +
                     out.shape().ToString());
  }
  return axis;
}

void CheckConcatFilled(const KernelContext& ctx, int64_t axis, int64_t filled) {
  const Shape& out = ctx.outputs[0]->shape();
  if (filled != out[static_cast<int>(axis)]) {
    throw ShapeError("kernel 'concat': inputs fill " + std::to_string(filled) + " of axis " +
                     std::to_string(axis) + " of " + out.ToString());
  }
}

}  // namespace twinflow::kernels
