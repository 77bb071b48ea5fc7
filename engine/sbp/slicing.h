#pragma once
// Physical slicing: which part of the logical tensor each device holds. Mesh axes apply in
// order; a split divides the current range of its tensor axis into balanced parts (the first
// n % k parts get one extra element, parts may be empty). Broadcast and Partial keep the range.
#include <cstdint>
#include <vector>

#include "engine/core/region.h"
#include "engine/core/shape.h"
#include "engine/sbp/layout.h"

namespace twinflow::sbp {

Region PhysicalRegion(const Shape& logical_shape, const Shape& hierarchy, const NdSbp& nd_sbp,
                      int64_t parallel_index);
Region PhysicalRegion(const Shape& logical_shape, const Layout& layout, int64_t parallel_index);
Shape PhysicalShape(const Shape& logical_shape, const Layout& layout, int64_t parallel_index);
// All devices' regions, by parallel index.
std::vector<Region> PhysicalRegions(const Shape& logical_shape, const Layout& layout);

}  // namespace twinflow::sbp
