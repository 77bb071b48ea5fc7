// Host side of the CUDA shape ops: reshape (a copy), transpose, slice, slice_grad and concat
// (box copies). They move bytes only, so one kernel serves every dtype.
#include "kernels/cpu/shape_checks.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/shape_launch.h"

namespace twinflow::kernels::cuda {
namespace {

// Copies all of `small` into `big` at `begin` (into = true) or the box of big at `begin` into
// small (into = false). ShapeError naming the op when the box does not fit.
void CopyBox(const KernelContext& ctx, const Tensor& src, Tensor& dst,
             const std::vector<int64_t>& begin, bool into, const char* op) {
  const Shape& box = into ? src.shape() : dst.shape();
  const Shape& outer = into ? dst.shape() : src.shape();
  CheckBox(begin, box, outer, op, src.dtype() == dst.dtype());
  CheckRank(box, op);
  BoxCopy b;
  b.rank = box.rank();
  const std::vector<int64_t> box_strides = box.Strides();
  const std::vector<int64_t> outer_strides = outer.Strides();
  int64_t offset = 0;
  for (int d = 0; d < b.rank; ++d) {
    b.extent[d] = box[d];
    offset += begin[d] * outer_strides[d];
    (into ? b.src_stride : b.dst_stride)[d] = box_strides[d];
    (into ? b.dst_stride : b.src_stride)[d] = outer_strides[d];
  }
  (into ? b.dst_offset : b.src_offset) = offset;
  LaunchBoxCopy(src.raw(), dst.raw(), b, DTypeSize(src.dtype()), Env(ctx, op).stream);
}

void Reshape(const KernelContext& ctx) {
  CheckReshape(ctx);
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  CopyAsync(Env(ctx, "reshape"), out.raw(), in.raw(), in.nbytes());
}

void Transpose(const KernelContext& ctx) {
  const std::vector<int64_t>& perm = CheckTranspose(ctx);
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  const int rank = in.shape().rank();
  CheckRank(out.shape(), "transpose");
  BoxCopy b;  // walk the output in order; each output axis steps its source axis
  b.rank = rank;
  const std::vector<int64_t> in_strides = in.shape().Strides();
  const std::vector<int64_t> out_strides = out.shape().Strides();
  for (int i = 0; i < rank; ++i) {
    b.extent[i] = out.shape()[i];
    b.src_stride[i] = in_strides[static_cast<int>(perm[i])];
    b.dst_stride[i] = out_strides[i];
  }
  LaunchBoxCopy(in.raw(), out.raw(), b, DTypeSize(in.dtype()), Env(ctx, "transpose").stream);
}

void Slice(const KernelContext& ctx) {
  CheckShapeOpArity(ctx, 1, 1, "slice");
  CopyBox(ctx, *ctx.inputs[0], *ctx.outputs[0], ctx.attrs.GetInts("begin"), false, "slice");
}

void SliceGrad(const KernelContext& ctx) {
  CheckShapeOpArity(ctx, 1, 1, "slice_grad");
  Tensor& dx = *ctx.outputs[0];
  ZeroAsync(Env(ctx, "slice_grad"), dx.raw(), dx.nbytes());
  CopyBox(ctx, *ctx.inputs[0], dx, ctx.attrs.GetInts("begin"), true, "slice_grad");
}

void Concat(const KernelContext& ctx) {
  const int64_t axis = CheckConcatAxis(ctx);
  Tensor& out = *ctx.outputs[0];
  int64_t offset = 0;
  for (const Tensor* in : ctx.inputs) {
    std::vector<int64_t> begin(out.shape().rank(), 0);
    begin[axis] = offset;
    CopyBox(ctx, *in, out, begin, true, "concat");
    offset += in->shape()[static_cast<int>(axis)];
  }
  CheckConcatFilled(ctx, axis, offset);
}

}  // namespace

void RegisterShapeCudaKernels(KernelRegistry& registry) {
  for (DType dtype : kAllDTypes) {
    registry.Register({"reshape", DeviceType::kCuda, dtype}, Reshape);
    registry.Register({"transpose", DeviceType::kCuda, dtype}, Transpose);
    registry.Register({"slice", DeviceType::kCuda, dtype}, Slice);
    registry.Register({"slice_grad", DeviceType::kCuda, dtype}, SliceGrad);
    registry.Register({"concat", DeviceType::kCuda, dtype}, Concat);
  }
}

}  // namespace twinflow::kernels::cuda
