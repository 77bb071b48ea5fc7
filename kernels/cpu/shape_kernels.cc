// CPU kernels of the shape family. They only move bytes, so one implementation serves every
// dtype. Each works on the physical tensors it is given: a split axis simply arrives shorter.
#include <cstring>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/kernel_families.h"
#include "kernels/cpu/shape_checks.h"

namespace twinflow::kernels {
namespace {

void Reshape(const KernelContext& ctx) {
  CheckReshape(ctx);
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  if (in.nbytes() > 0) std::memcpy(out.raw(), in.raw(), in.nbytes());
}

void Transpose(const KernelContext& ctx) {
  const std::vector<int64_t>& perm = CheckTranspose(ctx);
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  const int rank = in.shape().rank();
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

void Slice(const KernelContext& ctx) {
  CheckShapeOpArity(ctx, 1, 1, "slice");
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  const Region src = CheckBox(ctx.attrs.GetInts("begin"), out.shape(), in.shape(), "slice");
  out.CopyRegionFrom(in, src, Region::Full(out.shape()));
}

void SliceGrad(const KernelContext& ctx) {
  CheckShapeOpArity(ctx, 1, 1, "slice_grad");
  const Tensor& dy = *ctx.inputs[0];
  Tensor& dx = *ctx.outputs[0];
  const Region dst = CheckBox(ctx.attrs.GetInts("begin"), dy.shape(), dx.shape(), "slice_grad");
  dx.Fill(0);
  dx.CopyRegionFrom(dy, Region::Full(dy.shape()), dst);
}

void Concat(const KernelContext& ctx) {
  const int64_t axis = CheckConcatAxis(ctx);
  Tensor& out = *ctx.outputs[0];
  int64_t offset = 0;
  for (const Tensor* in : ctx.inputs) {
    std::vector<int64_t> begin(out.shape().rank(), 0);
    begin[axis] = offset;
    const Region dst = CheckBox(begin, in->shape(), out.shape(), "concat");
    out.CopyRegionFrom(*in, Region::Full(in->shape()), dst);
    offset += in->shape()[static_cast<int>(axis)];
  }
  CheckConcatFilled(ctx, axis, offset);
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
