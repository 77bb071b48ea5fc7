#pragma once
// SendRecvStep's time and link bytes without visiting its pieces one by one.
#include <optional>
#include <vector>

#include "engine/sbp/boxing_steps.h"
#include "engine/sbp/region_grid.h"

namespace twinflow::sbp {

// For the common case where every source cell has one holder (no Broadcast to choose among),
// every destination slice is held by as many devices as every other, and the cost model prices
// all cross-node messages alike (CostModel::NodeSize): a device's cross-node messages then sum
// to a count and a byte total, which RegionGrid::Meet gives in closed form, and only the
// pieces within its node are priced one by one. O(devices x devices per node) where walking
// the pieces is O(devices^2) for, say, S(0) -> S(1) over a thousand devices. The sums differ
// from the walk's only in rounding. Nothing when the case does not hold. `local` as
// SendRecvStep's.
std::optional<BoxingStep> SendRecvClosedForm(const StepContext& ctx, const LayoutFacts& from,
                                             const LayoutFacts& to,
                                             const std::vector<int64_t>& local);

}  // namespace twinflow::sbp
