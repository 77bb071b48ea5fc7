#pragma once
// Helpers shared by the CPU kernel files: shape checks that throw instead of reading out of
// bounds, dtype dispatch, row-major iteration with numpy broadcasting or over reduced axes,
// where a physical tensor sits in its logical tensor, and reads of i32/i64 index tensors.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "kernels/kernel.h"

namespace twinflow::kernels {

// ShapeError "<op>: expected N inputs and M outputs" unless the context has exactly those.
void CheckArity(const KernelContext& ctx, int inputs, int outputs, const std::string& op);
// ShapeError "<op>: <what> has shape X, expected Y".
void CheckShape(const Tensor& tensor, const Shape& expected, const std::string& op,
                const std::string& what);
void CheckShape(const Shape& shape, const Shape& expected, const std::string& op,
                const std::string& what);
// InvalidArgumentError unless the tensor has `dtype`.
void CheckDType(const Tensor& tensor, DType dtype, const std::string& op, const std::string& what);
// InvalidArgumentError unless the tensor is i32 or i64 (ids, labels).
void CheckIndexDType(const Tensor& tensor, const std::string& op, const std::string& what);
// The one element of `tensor` (a step counter, a gradient factor); ShapeError "<op>: <what> has
// shape X" unless it has exactly one.
double ScalarValue(const Tensor& tensor, const std::string& op, const std::string& what);
// InvalidArgumentError "<op>: <what> N is out of range [0, limit)" unless 0 <= index < limit.
void CheckIndexValue(int64_t index, int64_t limit, const std::string& op, const std::string& what);
// out = f(inputs[0], ...): `inputs` inputs, one output of input 0's dtype and shape (the
// elementwise kernels on every device check this alike).
void CheckMapsInput(const KernelContext& ctx, int inputs, const std::string& op);
// out = f(dy, forward): the forward tensor and the output have dy's dtype and shape.
void CheckGradOfElementwise(const KernelContext& ctx, const std::string& op);
// Element i of an i32 or i64 tensor (checked by CheckIndexDType).
inline int64_t IndexAt(const Tensor& tensor, int64_t i) {
  return tensor.dtype() == DType::kI32 ? tensor.data<int32_t>()[i] : tensor.data<int64_t>()[i];
}

// Strides (in elements) of `in` when iterating over `out`, aligned at the right: 0 on axes `in`
// lacks or holds with extent 1 (broadcast). ShapeError when `in` does not broadcast to `out`.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out, const std::string& op,
                                      const std::string& what);

// The numpy broadcast of two shapes; ShapeError naming the op when they do not broadcast.
Shape BroadcastShape(const Shape& a, const Shape& b, const std::string& op);

// Normalises an axis attribute in [-rank, rank); InvalidArgumentError naming the op otherwise.
int KernelAxis(int64_t axis, int rank, const std::string& op);

// A tensor viewed as [outer, n, inner] around `axis`.
struct AxisView {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};
AxisView ViewAround(const Shape& shape, int axis);

// The logical shape of input i; the physical one when the context carries none.
const Shape& LogicalInputShape(const KernelContext& ctx, size_t i);
// The logical index range that physical input (output) i covers along `axis`; the whole
// physical extent when the context carries no region.
Range InputRange(const KernelContext& ctx, size_t i, int axis);
Range OutputRange(const KernelContext& ctx, size_t i, int axis);

// The axes that attr "axes" reduces (every axis when absent) for a tensor of `rank`, as a mask;
// InvalidArgumentError naming the op for an axis out of range.
std::vector<bool> ReducedAxes(const Attrs& attrs, int rank, const std::string& op);
// The shape of `in` reduced over `reduced`, those axes dropped or (keepdims) kept as extent 1.
Shape ReducedShape(const Shape& in, const std::vector<bool>& reduced, bool keepdims);

// Calls fn(input flat index, output flat index) for every element of `in` in row-major order,
// where the output is `in` reduced over `reduced` (see ReducedShape).
template <typename Fn>
void ForEachReduced(const Shape& in, const std::vector<bool>& reduced, Fn&& fn) {
  const int rank = in.rank();
  const int64_t numel = in.numel();
  if (numel == 0) return;
  std::vector<int64_t> out_strides(rank, 0);
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (!reduced[d]) {
      out_strides[d] = stride;
      stride *= in[d];
    }
  }
  std::vector<int64_t> index(rank, 0);
  int64_t out_index = 0;
  for (int64_t flat = 0; flat < numel; ++flat) {
    fn(flat, out_index);
    for (int d = rank - 1; d >= 0; --d) {
      out_index += out_strides[d];
      if (++index[d] < in[d]) break;
      out_index -= out_strides[d] * in[d];
      index[d] = 0;
    }
  }
}

// Calls fn(flat_out_index, offsets) for every element of `out` in row-major order, where
// offsets[k] is the element offset into operand k given by strides[k] (from BroadcastStrides).
template <typename Fn>
void ForEachBroadcast(const Shape& out, const std::vector<std::vector<int64_t>>& strides, Fn&& fn) {
  const int rank = out.rank();
  const size_t operands = strides.size();
  const int64_t total = out.numel();
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> offsets(operands, 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    fn(flat, offsets.data());
    for (int d = rank - 1; d >= 0; --d) {
      ++index[d];
      for (size_t k = 0; k < operands; ++k) offsets[k] += strides[k][d];
      if (index[d] < out[d]) break;
      for (size_t k = 0; k < operands; ++k) offsets[k] -= strides[k][d] * out[d];
      index[d] = 0;
    }
  }
}

// Calls fn(T{}) with T the C++ type of `dtype` (f32, f64, i32, i64); InvalidArgumentError
// naming the op for the storage types.
template <typename Fn>
void DispatchNumeric(DType dtype, const std::string& op, Fn&& fn) {
  switch (dtype) {
    case DType::kF32:
      fn(float{});
      return;
    case DType::kF64:
      fn(double{});
      return;
    case DType::kI32:
      fn(int32_t{});
      return;
    case DType::kI64:
      fn(int64_t{});
      return;
    default:
      throw InvalidArgumentError(op + ": no kernel for dtype " + DTypeName(dtype));
  }
}

// Registers `kernel` for (op, cpu, dtype) for each dtype.
void RegisterCpu(KernelRegistry& registry, const std::string& op,
                 std::initializer_list<DType> dtypes, const Kernel& kernel);

}  // namespace twinflow::kernels
