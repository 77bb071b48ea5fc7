#include "engine/core/shape.h"

#include <algorithm>
#include <charconv>

#include "engine/core/error.h"

namespace twinflow {

Shape::Shape(std::initializer_list<int64_t> dims) : dims_(dims) { CheckExtents(); }

Shape::Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) { CheckExtents(); }

void Shape::CheckExtents() const {
  int64_t numel = 1;
  for (int64_t d : dims_) {
    if (d < 0) throw ShapeError("negative extent " + std::to_string(d) + " in shape " + ToString());
    if (d > 0 && numel > kMaxNumel / d) {
      throw ShapeError("shape " + ToString() + " has more than 2^60 elements");
    }
    numel *= d;
  }
}

std::vector<int64_t> Shape::Strides() const {
  std::vector<int64_t> strides(dims_.size(), 1);
  for (int i = rank() - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims_[i + 1];
  return strides;
}

std::string Shape::ToString() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

std::optional<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i;
    const int ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a[ia] : 1;
    const int64_t db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    dims[i] = da == 1 ? db : da;
  }
  return Shape(std::move(dims));
}

Shape ParseShape(std::string_view text) {
  std::string_view body = text;
  if (body.size() >= 2 && ((body.front() == '[' && body.back() == ']') ||
                           (body.front() == '(' && body.back() == ')'))) {
    body = body.substr(1, body.size() - 2);
  }
  std::vector<int64_t> dims;
  if (body.empty()) return Shape(dims);
  size_t pos = 0;
  while (true) {
    size_t comma = body.find(',', pos);
    std::string_view item =
        body.substr(pos, comma == std::string_view::npos ? body.npos : comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    int64_t value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || value < 0) {
      throw ShapeError("malformed shape '" + std::string(text) +
                       "': expected non-negative integers separated by commas, e.g. 7,5");
    }
    dims.push_back(value);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return Shape(std::move(dims));
}

}  // namespace twinflow
