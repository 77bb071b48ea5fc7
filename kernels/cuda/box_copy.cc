#include "kernels/cuda/box_copy.h"

#include <vector>

#include "engine/core/error.h"

namespace twinflow::kernels::cuda {
namespace {

// The strides (in elements) of a row-major shape.
std::vector<int64_t> RowMajorStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank(), 1);
  for (int d = shape.rank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

}  // namespace

BoxCopy MakeBox(const Shape& src, const Region& from, const Shape& dst, const Region& to,
                DType dtype) {
  if (from.shape() != to.shape() || from.rank() != src.rank() || to.rank() != dst.rank() ||
      from.rank() > kMaxDims || !Region::Full(src).Contains(from) ||
      !Region::Full(dst).Contains(to)) {
    throw ShapeError("a region copy of " + from.ToString() + " of " + DTypeName(dtype) +
                     src.ToString() + " into " + to.ToString() + " of " + DTypeName(dtype) +
                     dst.ToString());
  }
  BoxCopy box;
  box.rank = from.rank();
  const std::vector<int64_t> src_strides = RowMajorStrides(src);
  const std::vector<int64_t> dst_strides = RowMajorStrides(dst);
  for (int d = 0; d < box.rank; ++d) {
    box.extent[d] = from.shape()[d];
    box.src_stride[d] = src_strides[d];
    box.dst_stride[d] = dst_strides[d];
    box.src_offset += from.ranges[d].begin * src_strides[d];
    box.dst_offset += to.ranges[d].begin * dst_strides[d];
  }
  return box;
}

}  // namespace twinflow::kernels::cuda
