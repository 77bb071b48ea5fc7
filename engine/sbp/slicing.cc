#include "engine/sbp/slicing.h"

#include "engine/core/error.h"

namespace twinflow::sbp {

Region PhysicalRegion(const Shape& logical_shape, const Shape& hierarchy, const NdSbp& nd_sbp,
                      int64_t parallel_index) {
  nd_sbp.Validate(logical_shape.rank(), hierarchy.rank());
  if (parallel_index < 0 || parallel_index >= hierarchy.numel()) {
    throw SbpError("parallel index " + std::to_string(parallel_index) +
                   " is outside the hierarchy " + hierarchy.ToString());
  }
  std::vector<int64_t> coord(hierarchy.rank());
  for (int axis = hierarchy.rank() - 1; axis >= 0; --axis) {
    coord[axis] = parallel_index % hierarchy[axis];
    parallel_index /= hierarchy[axis];
  }
  Region region = Region::Full(logical_shape);
  for (int axis = 0; axis < hierarchy.rank(); ++axis) {
    const Sbp& sbp = nd_sbp[axis];
    if (!sbp.is_split()) continue;
    Range& range = region.ranges[sbp.axis];
    range = BalancedPart(range, hierarchy[axis], coord[axis]);
  }
  return region;
}

Region PhysicalRegion(const Shape& logical_shape, const Layout& layout, int64_t parallel_index) {
  layout.Validate(logical_shape);
  return PhysicalRegion(logical_shape, layout.placement.hierarchy(), layout.nd_sbp, parallel_index);
}

Shape PhysicalShape(const Shape& logical_shape, const Layout& layout, int64_t parallel_index) {
  return PhysicalRegion(logical_shape, layout, parallel_index).shape();
}

std::vector<Region> PhysicalRegions(const Shape& logical_shape, const Layout& layout) {
  layout.Validate(logical_shape);
  std::vector<Region> regions;
  for (int64_t i = 0; i < layout.placement.size(); ++i) {
    regions.push_back(
        PhysicalRegion(logical_shape, layout.placement.hierarchy(), layout.nd_sbp, i));
  }
  return regions;
}

}  // namespace twinflow::sbp
