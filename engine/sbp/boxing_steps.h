#pragma once
// Builders for single boxing steps, each priced by the CostModel. The planner's search graph
// (boxing_graph.h) is made of exactly these steps. A builder returns nothing when its step
// does not apply to the given pair of layouts.
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/region.h"
#include "engine/core/shape.h"
#include "engine/sbp/boxing_plan.h"
#include "engine/sbp/cost_model.h"
#include "engine/sbp/layout.h"
#include "engine/sbp/region_grid.h"

namespace twinflow::sbp {

// A layout with the facts every builder needs, computed once.
struct LayoutFacts {
  Layout layout;
  std::vector<Region> regions;  // by parallel index
  bool partial = false;         // Partial on some mesh axis of size > 1
  bool all_full = false;        // every device holds the whole tensor, none partially
  int64_t full_holder = -1;     // first device holding the whole tensor, or -1
  // The grid of `regions`, made once: send-recv steps and their bounds read it many times.
  std::shared_ptr<const RegionGrid> grid;
};
LayoutFacts ComputeFacts(const Shape& shape, Layout layout);

struct StepContext {
  const Shape& shape;
  DType dtype;
  const CostModel& cost_model;
};

// The step that changes mesh axis `axis` of `from` into `to` (same placement, `to` differs
// from `from` on that axis alone): all_reduce, all_gather, reduce_scatter, all_to_all, or a
// local B->S, B->P, S->P(sum) or size-1 relabel; nothing when no single such step exists.
std::optional<BoxingStep> AxisStep(const StepContext& ctx, const LayoutFacts& from,
                                   const LayoutFacts& to, int axis);

// Point-to-point copies of slice intersections from a non-partial layout to another (any
// placement). Each piece comes from the destination device itself when it holds it, else from
// the holder with the fastest link to it, of a window of up to 16 taken round-robin (the
// first on a tie). Without `with_transfers` only the time and link bytes are computed: the search
// prices many such steps and keeps few.
// `local[j]` is the source parallel index of destination device j, or -1.
std::optional<BoxingStep> SendRecvStep(const StepContext& ctx, const LayoutFacts& from,
                                       const LayoutFacts& to, const std::vector<int64_t>& local,
                                       bool with_transfers);

// A lower bound on SendRecvStep's time: the slowest of the destination devices to receive the
// pieces it does not hold (one message per source cell; across nodes at the inter-node price
// where the cost model has nodes, else each over the fastest link), or of the source devices
// to send their share. Cheap (closed-form sums per device), so the search can skip steps that
// cannot help. It stops as soon as some device's bound exceeds `stop_above` (the search's
// limit) and returns that device's, still a lower bound.
double SendRecvLowerBound(const StepContext& ctx, const LayoutFacts& from, const LayoutFacts& to,
                          const std::vector<int64_t>& local,
                          double stop_above = std::numeric_limits<double>::infinity());

// For each device of `dst`, its parallel index in `src`, or -1.
std::vector<int64_t> SourceIndexOfDestinations(const Placement& src, const Placement& dst);

// A broadcast from a device holding the whole tensor to every device of another placement
// whose layout has each device hold the whole tensor.
std::optional<BoxingStep> BroadcastStep(const StepContext& ctx, const LayoutFacts& from,
                                        const LayoutFacts& to);

}  // namespace twinflow::sbp
