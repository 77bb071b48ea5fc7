#include "engine/core/region.h"

#include <algorithm>

namespace twinflow {

Range BalancedPart(Range range, int64_t parts, int64_t index) {
  const int64_t n = range.size();
  const int64_t base = n / parts, extra = n % parts;
  const int64_t begin = range.begin + index * base + std::min(index, extra);
  return Range{begin, begin + base + (index < extra ? 1 : 0)};
}

Region Region::Full(const Shape& shape) {
  Region r;
  for (int64_t d : shape.dims()) r.ranges.push_back(Range{0, d});
  return r;
}

Shape Region::shape() const {
  std::vector<int64_t> dims;
  for (const Range& r : ranges) dims.push_back(r.size());
  return Shape(std::move(dims));
}

int64_t Region::numel() const {
  int64_t n = 1;
  for (const Range& r : ranges) n *= r.size();
  return n;
}

bool Region::empty() const { return numel() == 0; }

bool Region::Contains(const Region& inner) const {
  if (inner.empty()) return true;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (inner.ranges[i].begin < ranges[i].begin || inner.ranges[i].end > ranges[i].end) {
      return false;
    }
  }
  return true;
}

Region Region::Intersect(const Region& other) const {
  Region r;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const int64_t b = std::max(ranges[i].begin, other.ranges[i].begin);
    const int64_t e = std::min(ranges[i].end, other.ranges[i].end);
    r.ranges.push_back(Range{b, std::max(b, e)});
  }
  return r;
}

int64_t Region::IntersectNumel(const Region& other) const {
  int64_t n = 1;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const int64_t b = std::max(ranges[i].begin, other.ranges[i].begin);
    const int64_t e = std::min(ranges[i].end, other.ranges[i].end);
    if (e <= b) return 0;
    n *= e - b;
  }
  return n;
}

Region Region::RelativeTo(const Region& outer) const {
  Region r;
  for (size_t i = 0; i < ranges.size(); ++i) {
    r.ranges.push_back(
        Range{ranges[i].begin - outer.ranges[i].begin, ranges[i].end - outer.ranges[i].begin});
  }
  return r;
}

std::string Region::ToString() const {
  std::string s = "[";
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(ranges[i].begin) + ":" + std::to_string(ranges[i].end);
  }
  return s + "]";
}

}  // namespace twinflow
