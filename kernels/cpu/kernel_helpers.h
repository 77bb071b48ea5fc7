#pragma once
// Helpers shared by the CPU kernel files: shape checks that throw instead of reading out of
// bounds, dtype dispatch, and row-major iteration with numpy broadcasting.
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
// InvalidArgumentError unless the tensor has `dtype`.
void CheckDType(const Tensor& tensor, DType dtype, const std::string& op, const std::string& what);

// Strides (in elements) of `in` when iterating over `out`, aligned at the right: 0 on axes `in`
// lacks or holds with extent 1 (broadcast). ShapeError when `in` does not broadcast to `out`.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out, const std::string& op,
                                      const std::string& what);

// The numpy broadcast of two shapes; ShapeError naming the op when they do not broadcast.
Shape BroadcastShape(const Shape& a, const Shape& b, const std::string& op);

// Normalises an axis attribute in [-rank, rank); InvalidArgumentError naming the op otherwise.
int KernelAxis(int64_t axis, int rank, const std::string& op);

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
