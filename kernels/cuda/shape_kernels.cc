// Host side of the CUDA shape ops: reshape (a copy), transpose, slice, slice_grad and concat
// (box copies). They move bytes only, so one kernel serves every dtype.
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/shape_launch.h"

namespace twinflow::kernels::cuda {
namespace {

std::string Ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

void CheckCount(const KernelContext& ctx, size_t inputs, size_t outputs, const char* op) {
  if (ctx.inputs.size() != inputs || ctx.outputs.size() != outputs) {
    throw InvalidArgumentError(std::string("kernel '") + op + "' got " +
                               std::to_string(ctx.inputs.size()) + " inputs and " +
                               std::to_string(ctx.outputs.size()) + " outputs");
  }
}

// Copies all of `small` into `big` at `begin` (into = true) or the box of big at `begin` into
// small (into = false). ShapeError naming the op when the box does not fit.
void CopyBox(const KernelContext& ctx, const Tensor& src, Tensor& dst,
             const std::vector<int64_t>& begin, bool into, const char* op) {
  const Shape& box = into ? src.shape() : dst.shape();
  const Shape& outer = into ? dst.shape() : src.shape();
  bool ok = static_cast<int>(begin.size()) == box.rank() && box.rank() == outer.rank() &&
            src.dtype() == dst.dtype();
  for (int i = 0; ok && i < box.rank(); ++i) ok = begin[i] >= 0 && begin[i] + box[i] <= outer[i];
  if (!ok) {
    throw ShapeError(std::string("kernel '") + op + "': a box of " + box.ToString() + " at " +
                     Ints(begin) + " does not fit in " + outer.ToString());
  }
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
  CheckCount(ctx, 1, 1, "reshape");
  const Tensor& in = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  if (in.numel() != out.numel() || in.dtype() != out.dtype()) {
    throw ShapeError("kernel 'reshape': cannot reshape " + in.shape().ToString() + " into " +
                     out.shape().ToString());
  }
  CopyAsync(Env(ctx, "reshape"), out.raw(), in.raw(), in.nbytes());
}

void Transpose(const KernelContext& ctx) {
  CheckCount(ctx, 1, 1, "transpose");
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
  CheckCount(ctx, 1, 1, "slice");
  CopyBox(ctx, *ctx.inputs[0], *ctx.outputs[0], ctx.attrs.GetInts("begin"), false, "slice");
}

void SliceGrad(const KernelContext& ctx) {
  CheckCount(ctx, 1, 1, "slice_grad");
  Tensor& dx = *ctx.outputs[0];
  ZeroAsync(Env(ctx, "slice_grad"), dx.raw(), dx.nbytes());
  CopyBox(ctx, *ctx.inputs[0], dx, ctx.attrs.GetInts("begin"), true, "slice_grad");
}

void Concat(const KernelContext& ctx) {
  if (ctx.outputs.size() != 1 || ctx.inputs.empty()) CheckCount(ctx, 1, 1, "concat");
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
    CopyBox(ctx, *in, out, begin, true, "concat");
    offset += in->shape()[static_cast<int>(axis)];
  }
  if (offset != out.shape()[static_cast<int>(axis)]) {
    throw ShapeError("kernel 'concat': inputs fill " + std::to_string(offset) + " of axis " +
                     std::to_string(axis) + " of " + out.shape().ToString());
  }
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
