#pragma once
// Helpers shared by the reduction, softmax, normalization and embedding CPU kernels ("rsne"):
// arity and shape checks that throw instead of reading out of bounds, where a physical tensor
// sits in its logical tensor, index reads for i32/i64 ids, and reduction axis handling.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "kernels/kernel.h"

namespace twinflow::kernels::rsne {

inline void CheckArity(const KernelContext& ctx, const char* op, size_t inputs, size_t outputs) {
  if (ctx.inputs.size() != inputs || ctx.outputs.size() != outputs) {
    throw InvalidArgumentError(std::string(op) + " kernel: expects " + std::to_string(inputs) +
                               " inputs and " + std::to_string(outputs) + " outputs, got " +
                               std::to_string(ctx.inputs.size()) + " and " +
                               std::to_string(ctx.outputs.size()));
  }
}

inline void CheckShape(const char* op, const char* role, const Shape& got, const Shape& want) {
  if (got != want) {
    throw ShapeError(std::string(op) + " kernel: " + role + " has shape " + got.ToString() +
                     ", expected " + want.ToString());
  }
}

// The logical shape of input i; the physical one when the context carries none.
inline const Shape& LogicalInputShape(const KernelContext& ctx, size_t i) {
  return i < ctx.input_logical_shapes.size() ? ctx.input_logical_shapes[i] : ctx.inputs[i]->shape();
}
inline const Shape& LogicalOutputShape(const KernelContext& ctx, size_t i) {
  return i < ctx.output_logical_shapes.size() ? ctx.output_logical_shapes[i]
                                              : ctx.outputs[i]->shape();
}

// The logical index range that physical input (output) i covers along `axis`.
inline Range InputRange(const KernelContext& ctx, size_t i, int axis) {
  if (i < ctx.input_regions.size() && axis < ctx.input_regions[i].rank()) {
    return ctx.input_regions[i].ranges[axis];
  }
  return Range{0, ctx.inputs[i]->shape()[axis]};
}
inline Range OutputRange(const KernelContext& ctx, size_t i, int axis) {
  if (i < ctx.output_regions.size() && axis < ctx.output_regions[i].rank()) {
    return ctx.output_regions[i].ranges[axis];
  }
  return Range{0, ctx.outputs[i]->shape()[axis]};
}

inline void CheckIndexTensor(const char* op, const char* role, const Tensor& t) {
  if (t.dtype() != DType::kI32 && t.dtype() != DType::kI64) {
    throw InvalidArgumentError(std::string(op) + " kernel: " + role + " must be i32 or i64, got " +
                               DTypeName(t.dtype()));
  }
}

inline int64_t IndexAt(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kI32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
}

// Throws InvalidArgumentError unless 0 <= index < limit.
inline void CheckIndexValue(const char* op, const char* role, int64_t index, int64_t limit) {
  if (index < 0 || index >= limit) {
    throw InvalidArgumentError(std::string(op) + " kernel: " + role + " " + std::to_string(index) +
                               " is out of range [0, " + std::to_string(limit) + ")");
  }
}

inline void CheckDType(const char* op, const char* role, const Tensor& t, DType dtype) {
  if (t.dtype() != dtype) {
    throw InvalidArgumentError(std::string(op) + " kernel: " + role + " must be " +
                               DTypeName(dtype) + ", got " + DTypeName(t.dtype()));
  }
}

// The reduced axes of attrs "axes" (all when absent) for a tensor of `rank`, as a mask.
inline std::vector<bool> ReducedAxes(const char* op, const Attrs& attrs, int rank) {
  std::vector<bool> reduced(rank, !attrs.Has("axes"));
  if (!attrs.Has("axes")) return reduced;
  for (int64_t axis : attrs.GetInts("axes")) {
    if (axis < -rank || axis >= rank) {
      throw InvalidArgumentError(std::string(op) + " kernel: axis " + std::to_string(axis) +
                                 " is out of range for rank " + std::to_string(rank));
    }
    reduced[axis < 0 ? axis + rank : axis] = true;
  }
  return reduced;
}

// The output shape of reducing `in` over `reduced`.
inline Shape ReducedShape(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (!reduced[i]) {
      dims.push_back(in[i]);
    } else if (keepdims) {
      dims.push_back(1);
    }
  }
  return Shape(dims);
}

// For each element of `in` in row-major order: f(input flat index, output flat index), where
// the output drops (or keeps as extent 1) the reduced axes.
template <typename F>
void ForEachReduced(const Shape& in, const std::vector<bool>& reduced, F&& f) {
  const int rank = in.rank();
  const int64_t numel = in.numel();
  if (numel == 0) return;
  std::vector<int64_t> out_strides(rank, 0);
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    if (!reduced[i]) {
      out_strides[i] = stride;
      stride *= in[i];
    }
  }
  std::vector<int64_t> coord(rank, 0);
  int64_t out_index = 0;
  for (int64_t index = 0; index < numel; ++index) {
    f(index, out_index);
    for (int i = rank - 1; i >= 0; --i) {  // odometer step
      out_index += out_strides[i];
      if (++coord[i] < in[i]) break;
      out_index -= out_strides[i] * in[i];
      coord[i] = 0;
    }
  }
}

// A tensor viewed as [outer, n, inner] around `axis`.
struct AxisView {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

inline AxisView ViewAround(const Shape& shape, int axis) {
  AxisView view;
  for (int i = 0; i < shape.rank(); ++i) {
    if (i < axis) view.outer *= shape[i];
    if (i == axis) view.n = shape[i];
    if (i > axis) view.inner *= shape[i];
  }
  return view;
}

inline int NormalizeKernelAxis(const char* op, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    throw InvalidArgumentError(std::string(op) + " kernel: axis " + std::to_string(axis) +
                               " is out of range for rank " + std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

}  // namespace twinflow::kernels::rsne

namespace twinflow::kernels {
// The class-split cross-entropy kernels (sparse_xent_class_split_kernels.cc); called by
// RegisterSoftmaxKernels.
void RegisterSparseXentClassSplitKernels(KernelRegistry& registry);
}  // namespace twinflow::kernels
