#pragma once
// BoxingGraph: the planner's search space. Nodes are every layout of the tensor on the source
// and on the destination placement (every NdSbp of S(axis), B, P(sum|max|min) per mesh axis);
// edges are single boxing steps (boxing_steps.h): one-axis collectives and local steps within
// a placement, and send/recv and broadcast between any two non-partial layouts. Node facts
// and out-edges are computed lazily, as the search reaches them.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "engine/sbp/boxing_cache.h"
#include "engine/sbp/boxing_steps.h"

namespace twinflow::sbp {

// The most layouts one search may span; more is refused with an SbpError naming the cap. A
// 2-D tensor on a mesh of five axes of extent above 1 has 6^5 = 7,776 (about 15 s).
constexpr int64_t kMaxBoxingLayouts = 10000;

// Which Sbps a mesh axis of extent 1 takes in the graph: only the two endpoints' (enough for
// a route between them), or every one (for BoxingTimesFrom, which prices every destination).
enum class UnitAxes { kEndpointsOnly, kEveryLayout };

class BoxingGraph {
 public:
  // `cost_model` and `cache` (when given: layout facts and steps shared with other graphs of
  // the same cost model; else the graph keeps its own) must outlive the graph. SbpError when
  // the layouts exceed kMaxBoxingLayouts.
  BoxingGraph(const Shape& shape, DType dtype, const Layout& src, const Layout& dst,
              const CostModel& cost_model, UnitAxes unit_axes, BoxingCache* cache = nullptr);

  int size() const { return static_cast<int>(nodes_.size()); }
  int source() const { return source_; }
  int target() const { return target_; }
  const Layout& layout(int node);
  // Calls visit(next, step) for every step leaving `node`, in a fixed order. Point-to-point
  // steps whose lower bound exceeds budget(next) are skipped (they cannot improve the path to
  // next), and come without their transfer list: Materialize adds it to the ones kept.
  using StepVisitor = std::function<void(int next, const BoxingCache::StepPtr& step)>;
  void VisitOutSteps(int node, const std::function<double(int)>& budget, const StepVisitor& visit);
  BoxingStep Materialize(BoxingStep step, int from, int to);

 private:
  struct Node {
    int placement;  // index into placements_
    NdSbp nd_sbp;
  };
  const LayoutFacts& Facts(int node) { return *FactsOf(node); }
  const BoxingCache::FactsPtr& FactsOf(int node);
  // The one-axis steps leaving `node` (computed once per graph, from the cache when there).
  const std::vector<std::pair<int, BoxingCache::StepPtr>>& AxisSteps(int node);
  bool IsPartial(int node) const;  // without computing facts
  int NodeOf(int placement, const NdSbp& nd_sbp) const;

  Shape shape_;
  DType dtype_;
  const CostModel& cost_model_;
  std::vector<Placement> placements_;  // the source's, then the destination's if different
  std::vector<Node> nodes_;
  std::vector<std::map<NdSbp, int>> index_;  // per placement
  std::unique_ptr<BoxingCache> own_cache_;   // when none was given
  BoxingCache* cache_;
  std::vector<BoxingCache::FactsPtr> facts_;
  // One-axis steps per node, kept across searches (they do not depend on the budget).
  std::vector<std::optional<std::vector<std::pair<int, BoxingCache::StepPtr>>>> axis_steps_;
  // local_index_[p][q][j]: parallel index in placement p of device j of placement q, or -1.
  std::vector<std::vector<std::vector<int64_t>>> local_index_;
  std::vector<std::vector<std::vector<Sbp>>> options_;  // [placement][mesh axis]
  int source_ = 0;
  int target_ = 0;
};

}  // namespace twinflow::sbp
