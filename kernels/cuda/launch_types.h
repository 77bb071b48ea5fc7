#pragma once
// Plain structs that the host side (.cc, compiled by the C++ compiler) fills and passes by
// value to the launchers in the .cu files. Up to kMaxDims axes, which covers every op's rank.
#include <cstdint>

namespace twinflow::kernels::cuda {

constexpr int kMaxDims = 8;

// An iteration space of `rank` axes and, per axis, the element stride of up to three operands.
// rank 0 with `contiguous` means "every operand is walked flat, offset = index".
struct Strides3 {
  int rank = 0;
  bool contiguous = false;
  int64_t extent[kMaxDims] = {};
  int64_t stride[3][kMaxDims] = {};
};

// A box copy: `extent` elements per axis, read at src_offset + sum(i * src_stride) and written
// at dst_offset + sum(i * dst_stride). Transpose, slice, slice_grad and concat are all one.
struct BoxCopy {
  int rank = 0;
  int64_t extent[kMaxDims] = {};
  int64_t src_stride[kMaxDims] = {};
  int64_t dst_stride[kMaxDims] = {};
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
};

// Where each element of a physical tensor sits in its logical tensor: physical extents, the
// region's begin and the logical row-major strides. Random values and masks read it.
struct LogicalIndexer {
  int rank = 0;
  int64_t extent[kMaxDims] = {};
  int64_t begin[kMaxDims] = {};
  int64_t logical_stride[kMaxDims] = {};
};

// A reduction: each output element is the reduction over the `reduced` axes at the offset its
// index gives on the `kept` axes (kept axes in output row-major order).
struct ReduceSpace {
  int kept_rank = 0;
  int64_t kept_extent[kMaxDims] = {};
  int64_t kept_stride[kMaxDims] = {};
  int reduced_rank = 0;
  int64_t reduced_extent[kMaxDims] = {};
  int64_t reduced_stride[kMaxDims] = {};
  int64_t outputs = 0;
  int64_t count = 0;  // elements per output
};

}  // namespace twinflow::kernels::cuda
