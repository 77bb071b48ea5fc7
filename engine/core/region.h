#pragma once
// Range and Region: half-open boxes of tensor indices. Physical slices, boxing transfers and
// tensor copies are all expressed as Regions.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/shape.h"

namespace twinflow {

struct Range {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive
  int64_t size() const { return end > begin ? end - begin : 0; }
  bool empty() const { return end <= begin; }
  bool operator==(const Range& other) const = default;
};

// Part `index` of `parts` balanced parts of `range`: the first size % parts get one extra.
Range BalancedPart(Range range, int64_t parts, int64_t index);

struct Region {
  std::vector<Range> ranges;  // one per tensor dimension

  static Region Full(const Shape& shape);
  int rank() const { return static_cast<int>(ranges.size()); }
  Shape shape() const;
  int64_t numel() const;
  bool empty() const;
  bool Contains(const Region& inner) const;  // every index of inner lies in this
  Region Intersect(const Region& other) const;
  int64_t IntersectNumel(const Region& other) const;  // Intersect(other).numel(), no allocation
  Region RelativeTo(const Region& outer) const;       // shift so that outer's origin is zero
  std::string ToString() const;                       // "[0:4,2:5]"
  bool operator==(const Region& other) const = default;
};

}  // namespace twinflow
