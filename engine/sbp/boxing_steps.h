#pragma once
// Builders for single boxing steps, each priced by the CostModel. The planner's search graph
// (boxing_graph.h) is made of exactly these steps. A builder returns nothing when its step
// does not apply to the given pair of layouts.
#include <optional>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/region.h"
#include "engine/core/shape.h"
#include "engine/sbp/boxing_plan.h"
#include "engine/sbp/cost_model.h"
#include "engine/sbp/layout.h"

namespace twinflow::sbp {

// A layout with the facts every builder needs, computed once.
struct LayoutFacts {
  Layout layout;
  std::vector<Region> regions;  // by parallel index
  bool partial = false;         // Partial on some mesh axis of size > 1
  bool all_full = false;        // every device holds the whole tensor, none partially
  int64_t full_holder = -1;     // first device holding the whole tensor, or -1
};
LayoutFacts ComputeFacts(const Shape& shape, Layout layout);

struct StepContext {
  const Shape& shape;
  DType dtype;
  const CostModel& cost_model;
};

// Every step that changes one mesh axis of `from` (same placement): all_reduce, all_gather,
// reduce_scatter, all_to_all, and the local B->S, B->P, S->P(sum) and size-1 relabels. `to`
// is the layout with mesh axis `axis` set to `to_sbp`.
std::optional<BoxingStep> AxisStep(const StepContext& ctx, const LayoutFacts& from, int axis,
                                   const Sbp& to_sbp);

// Point-to-point copies of slice intersections from a non-partial layout to another (any
// placement). Each piece comes from the destination device itself when it holds it, else from
// the holder that finishes it soonest given the load already assigned.
std::optional<BoxingStep> SendRecvStep(const StepContext& ctx, const LayoutFacts& from,
                                       const LayoutFacts& to);

// A broadcast from a device holding the whole tensor to every device of another placement
// whose layout has each device hold the whole tensor.
std::optional<BoxingStep> BroadcastStep(const StepContext& ctx, const LayoutFacts& from,
                                        const LayoutFacts& to);

}  // namespace twinflow::sbp
