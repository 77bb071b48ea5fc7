// CPU kernels of the shape family. They only move bytes, so one implementation serves every
// dtype. Each works on the physical tensors it is given: a split axis simply arrives shorter.
#include <cstring>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/kernel_families.h"

namespace twinflow::kernels {
namespace {

std::string Ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

void CheckArity(const KernelContext& ctx, size_t inputs, size_t outputs, const char* op) {
  if (ctx.inputs.size() != inputs || ctx.outputs.size() != outputs) {
    throw InvalidArgumentError(std::string("kernel '") + op + "' got " +
                               std::to_string(ctx.inputs.size()) + " inputs and " +
                               std::to_string(ctx.outputs.size()) + " outputs");
  }
}

void Reshape(const KernelContext& ctx) {
  CheckArity(ctx, 1, 1, "reshape");
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  if (in.numel() != out.numel() || in.dtype() != out.dtype()) {
    throw ShapeError("kernel 'reshape': cannot reshape " + in.shape().ToString() + " into " +
                     out.shape().ToString());
  }
  if (in.nbytes() > 0) std::memcpy(out.raw(), in.raw(), in.nbytes());
}

void Transpose(const KernelContext& ctx) {
  CheckArity(ctx, 1, 1, "transpose");
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
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
  const int64_t elem = DTypeSize(in.dtype());
  const std::vector<int64_t> in_strides = in.shape().Strides();
  // Stride in the input of each output axis; walk the output in order with a counter.
  std::vector<int64_t> step(rank);
  for (int i = 0; i < rank; ++i) step[i] = in_strides[static_cast<int>(perm[i])];
  std::vector<int64_t> index(rank, 0);
  int64_t src = 0;
  const int64_t n = out.numel();
  for (int64_t dst = 0; dst < n; ++dst) {
    std::memcpy(out.raw() + dst * elem, in.raw() + src * elem, elem);
    for (int axis = rank - 1; axis >= 0; --axis) {
      if (++index[axis] < out.shape()[axis]) {
        src += step[axis];
        break;
      }
      src -= step[axis] * (index[axis] - 1);
      index[axis] = 0;
    }
  }
}

// The box at `begin` with `shape`, checked to lie inside `outer`.
Region Box(const std::vector<int64_t>& begin, const Shape& shape, const Shape& outer,
           const char* op) {
  Region r;
  bool ok = static_cast<int>(begin.size()) == shape.rank() && shape.rank() == outer.rank();
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

void Slice(const KernelContext& ctx) {
  CheckArity(ctx, 1, 1, "slice");
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  const Region src = Box(ctx.attrs.GetInts("begin"), out.shape(), in.shape(), "slice");
  out.CopyRegionFrom(in, src, Region::Full(out.shape()));
}

void SliceGrad(const KernelContext& ctx) {
  CheckArity(ctx, 1, 1, "slice_grad");
  const Tensor& dy = *ctx.inputs[0];
  Tensor& dx = *ctx.outputs[0];
  const Region dst = Box(ctx.attrs.GetInts("begin"), dy.shape(), dx.shape(), "slice_grad");
  dx.Fill(0);
  dx.CopyRegionFrom(dy, Region::Full(dy.shape()), dst);
}

void Concat(const KernelContext& ctx) {
  if (ctx.outputs.size() != 1 || ctx.inputs.empty()) CheckArity(ctx, 1, 1, "concat");
  Tensor& out = *ctx.outputs[0];
  const int64_t axis = ctx.attrs.GetInt("axis");
  if (axis < 0 || axis >= out.shape().rank()) {
    throw ShapeError("kernel 'concat': axis " + std::to_string(axis) + " is out of range for " +
                     out.shape().ToString());
  }
  int64_t offset = 0;
  for (const Tensor* in : ctx.inputs) {
    std::vector<int64_t> begin(out.shape().rank(), 0);
    begin[axis] = offset;
    const Region dst = Box(begin, in->shape(), out.shape(), "concat");
    out.CopyRegionFrom(*in, Region::Full(in->shape()), dst);
    offset += in->shape()[static_cast<int>(axis)];
  }
  if (offset != out.shape()[static_cast<int>(axis)]) {
    throw ShapeError("kernel 'concat': inputs fill " + std::to_string(offset) + " of axis " +
                     std::to_string(axis) + " of " + out.shape().ToString());
  }
}

}  // namespace

void RegisterShapeKernels(KernelRegistry& registry) {
  for (DType dtype : kAllDTypes) {
    registry.Register({"reshape", DeviceType::kCpu, dtype}, Reshape);
    registry.Register({"transpose", DeviceType::kCpu, dtype}, Transpose);
    registry.Register({"slice", DeviceType::kCpu, dtype}, Slice);
    registry.Register({"slice_grad", DeviceType::kCpu, dtype}, SliceGrad);
    registry.Register({"concat", DeviceType::kCpu, dtype}, Concat);
  }
}

}  // namespace twinflow::kernels
