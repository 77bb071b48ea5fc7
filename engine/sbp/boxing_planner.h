#pragma once
// The boxing planner: the cheapest sequence of primitive steps from one (placement, NdSbp) to
// another under a CostModel. It is a shortest-path search over layouts on the source and the
// destination placement (docs/boxing.md explains the graph and why the result is optimal over
// it, which makes plan costs obey the triangle inequality through those layouts).
#include <map>

#include "engine/core/dtype.h"
#include "engine/core/shape.h"
#include "engine/sbp/boxing_cache.h"
#include "engine/sbp/boxing_plan.h"
#include "engine/sbp/cost_model.h"
#include "engine/sbp/layout.h"

namespace twinflow::sbp {

// What a plan's send-recv steps carry: their transfer lists, which lowering turns into
// copies, or only their time and link bytes, which is all a report needs. A send-recv among
// thousands of devices can list millions of transfers.
enum class BoxingDetail { kTransfers, kPriceOnly };

// Throws SbpError when either layout does not fit the shape. Deterministic: the same inputs
// always give the same plan. `cache` as BoxingTimesFrom's.
BoxingPlan PlanBoxing(const Shape& shape, DType dtype, const Layout& src, const Layout& dst,
                      const CostModel& cost_model, BoxingDetail detail = BoxingDetail::kTransfers,
                      BoxingCache* cache = nullptr);

// The time of the cheapest plan from `src` to every layout of the tensor on `dst_placement`,
// by NdSbp, from one search: what the SBP search needs when it prices every signature of a
// consumer against one producer layout. Each time equals PlanBoxing(...).time(). `cache`,
// when given, shares layout facts and priced steps with other such searches of the same cost
// model (it must outlive the call).
std::map<NdSbp, double> BoxingTimesFrom(const Shape& shape, DType dtype, const Layout& src,
                                        const Placement& dst_placement, const CostModel& cost_model,
                                        BoxingCache* cache = nullptr);

}  // namespace twinflow::sbp
