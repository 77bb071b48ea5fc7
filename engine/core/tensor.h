#pragma once
// Tensor: a contiguous, row-major host tensor. It is what reference code, tests and the CPU
// runtime hold. Normally it owns its bytes; a view (Tensor::View) instead works on external
// memory, such as a slot of a runtime arena, so that kernels write straight into the arena.
//
// Copies always have value semantics: copying any tensor, a view included, gives an owning
// tensor with its own bytes (so code such as `Tensor acc = inputs[0]; acc.ReduceFrom(...)`
// can never write through a view by accident). Moving keeps the view.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/reduce_op.h"
#include "engine/core/region.h"
#include "engine/core/rng.h"
#include "engine/core/shape.h"

namespace twinflow {

class Tensor {
 public:
  Tensor() = default;
  Tensor(Shape shape, DType dtype);  // zero-filled
  Tensor(const Tensor& other);       // an owning copy, also of a view
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept = default;
  Tensor& operator=(Tensor&& other) noexcept = default;

  // A non-owning tensor over numel * DTypeSize(dtype) bytes at `data`, which must outlive it
  // and is never freed by it. InvalidArgumentError when data is null for a non-empty shape.
  static Tensor View(Shape shape, DType dtype, std::byte* data);
  bool is_view() const { return view_ != nullptr; }
  // A view of this tensor's bytes, which must outlive it (copying a Tensor copies its bytes).
  Tensor AsView() const { return View(shape_, dtype_, const_cast<std::byte*>(raw())); }

  // Values drawn uniformly: integers in [-100, 100], floats in [-1, 1) (rounded for bf16/f16).
  static Tensor Random(Shape shape, DType dtype, Rng& rng);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return shape_.numel(); }
  int64_t nbytes() const {
    return view_ ? numel() * DTypeSize(dtype_) : static_cast<int64_t>(bytes_.size());
  }
  std::byte* raw() { return view_ ? view_ : bytes_.data(); }
  const std::byte* raw() const { return view_ ? view_ : bytes_.data(); }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(raw());
  }

  // Element access by flat index through double; exact for all values of every dtype but i64
  // beyond 2^53. bf16/f16 convert through float.
  double GetDouble(int64_t index) const;
  void SetDouble(int64_t index, double value);

  Tensor Slice(const Region& region) const;  // a copy of region
  // Copies src[src_region] into this[dst_region]; the two regions have the same shape.
  void CopyRegionFrom(const Tensor& src, const Region& src_region, const Region& dst_region);
  void Fill(double value);
  void FillIdentity(ReduceOp op);  // 0 for sum, lowest for max, highest for min
  // this = op(this, other) elementwise; shapes and dtypes must match. Sums of bf16/f16 are
  // computed in float and rounded once.
  void ReduceFrom(const Tensor& other, ReduceOp op);
  // this[dst_region] = op(this[dst_region], src[src_region]), rounded as ReduceFrom; the regions
  // have the same shape.
  void ReduceRegionFrom(const Tensor& src, const Region& src_region, const Region& dst_region,
                        ReduceOp op);

  std::string ToString(int64_t max_elements = 64) const;

 private:
  Shape shape_;
  DType dtype_ = DType::kF32;
  std::vector<std::byte> bytes_;
  std::byte* view_ = nullptr;  // external bytes of a view; bytes_ is then empty
};

bool BitEqual(const Tensor& a, const Tensor& b);  // same shape, dtype and bytes
// The index of the first NaN or infinite element, or -1 (always -1 for integer dtypes).
int64_t FirstNonFinite(const Tensor& t);
// Largest |a - b| / (atol + rtol * |b|) over elements; <= 1 means "close". Equal infinities
// and two NaNs are close; a NaN against a number is not. Infinite when the shapes or dtypes
// differ.
double CloseRatio(const Tensor& a, const Tensor& b, double rtol, double atol);

}  // namespace twinflow
