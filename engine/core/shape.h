#pragma once
// Shape: the extent of each dimension of a tensor (or of a device mesh). Extents may be zero;
// none is negative and their product is at most 2^60 (the constructors check), so numel() and
// numel() times any dtype's size never overflow.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace twinflow {

class Shape {
 public:
  static constexpr int64_t kMaxNumel = int64_t{1} << 60;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::vector<int64_t> dims);

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int axis) const { return dims_[axis]; }
  int64_t& operator[](int axis) { return dims_[axis]; }
  int64_t numel() const {  // product of extents; 1 for rank 0 (inline: kernels ask often)
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    return n;
  }
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t> Strides() const;  // row-major, in elements

  std::string ToString() const;  // "[7,5]"
  bool operator==(const Shape& other) const = default;

 private:
  void CheckExtents() const;  // ShapeError on a negative extent or a product over kMaxNumel

  std::vector<int64_t> dims_;
};

// Numpy broadcasting of two shapes, aligned at the right: each pair of extents equal or one of
// them 1. nullopt when they do not broadcast. Op inference and kernels share it.
std::optional<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// Parses "7,5", "[7,5]" or "(7,5)"; every extent a non-negative integer. Throws ShapeError.
Shape ParseShape(std::string_view text);

}  // namespace twinflow
