#include "engine/sbp/boxing_planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <tuple>

#include "engine/core/error.h"
#include "engine/sbp/boxing_graph.h"

namespace twinflow::sbp {
namespace {

// Path costs are sums of floating-point times, so two routes of equal price can differ in the
// last bits. Within this relative tolerance they count as equal, and the route with fewer
// steps, then the one found first, wins: plans stay simple and deterministic.
constexpr double kRelativeTie = 1e-9;

struct Label {
  double time = 0;
  int steps = -1;  // -1: not reached
};

bool Better(const Label& candidate, const Label& current) {
  if (current.steps < 0) return true;  // not reached yet
  const double tie = kRelativeTie * std::max(candidate.time, current.time);
  if (candidate.time < current.time - tie) return true;
  return candidate.time <= current.time + tie && candidate.steps < current.steps;
}

// A time a label reached through one more step from `from` must stay under to be Better than
// `known` (or than a label through it and further steps): an edge whose lower bound exceeds it
// less from's time cannot help.
double Reach(const Label& known, const Label& from) {
  if (from.steps + 1 < known.steps) return known.time + 2 * kRelativeTie * known.time;
  // Better needs candidate < known - tie, tie at least kRelativeTie * known: a bound reaching
  // that, or beyond, cannot win.
  return std::nextafter(known.time - kRelativeTie * known.time, -1.0);
}

struct Path {
  double time = 0;
  std::vector<std::pair<int, BoxingCache::StepPtr>> steps;  // (node reached, step), source first
};

// Dijkstra from source to target. Point-to-point edges are priced only when their lower bound
// could beat both the label of the node they reach and `cap`, a known upper bound on the
// answer; with point_to_point false they are left out. With `labels`, the search runs to
// exhaustion and reports every node's label instead of stopping at the target; `caps`, when
// given, are known upper bounds on those labels (a search without point-to-point steps), and
// bound the edges priced as `cap` does.
std::optional<Path> ShortestPath(BoxingGraph& graph, bool point_to_point, double cap,
                                 std::vector<Label>* labels = nullptr,
                                 const std::vector<Label>* caps = nullptr) {
  const double infinity = std::numeric_limits<double>::infinity();
  std::vector<Label> label(graph.size());
  std::vector<int> previous(graph.size(), -1);
  std::vector<BoxingCache::StepPtr> via(graph.size());
  std::vector<bool> done(graph.size(), false);
  // Min-heap on (time, steps, node): the node id breaks exact ties deterministically.
  using Entry = std::tuple<double, int, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> frontier;
  label[graph.source()] = Label{0.0, 0};
  frontier.emplace(0.0, 0, graph.source());
  while (!frontier.empty()) {
    // A plain variable, not a structured binding: lambdas below capture it (Clang 14 cannot
    // capture bindings).
    const int node = std::get<2>(frontier.top());
    frontier.pop();
    if (done[node]) continue;
    done[node] = true;
    if (node == graph.target() && !labels) break;
    const auto budget = [&](int next) {
      if (!point_to_point) return -1.0;
      double limit = cap == infinity ? infinity : cap + kRelativeTie * cap;
      if (!labels && label[graph.target()].steps >= 0) {
        limit = std::min(limit, Reach(label[graph.target()], label[node]));
      }
      if (label[next].steps >= 0) limit = std::min(limit, Reach(label[next], label[node]));
      if (caps && (*caps)[next].steps >= 0) {
        limit = std::min(limit, Reach((*caps)[next], label[node]));
      }
      return limit == infinity ? infinity : limit - label[node].time;
    };
    graph.VisitOutSteps(node, budget, [&](int next, const BoxingCache::StepPtr& step) {
      if (done[next]) return;
      const Label candidate{label[node].time + step->time, label[node].steps + 1};
      if (!Better(candidate, label[next])) return;
      label[next] = candidate;
      previous[next] = node;
      via[next] = step;
      frontier.emplace(candidate.time, candidate.steps, next);
    });
  }
  if (labels) *labels = label;
  if (!done[graph.target()]) return std::nullopt;
  Path path;
  path.time = label[graph.target()].time;
  for (int node = graph.target(); node != graph.source(); node = previous[node]) {
    path.steps.emplace_back(node, via[node]);
  }
  std::reverse(path.steps.begin(), path.steps.end());
  return path;
}

}  // namespace

BoxingPlan PlanBoxing(const Shape& shape, DType dtype, const Layout& src, const Layout& dst,
                      const CostModel& cost_model, BoxingDetail detail, BoxingCache* cache) {
  src.Validate(shape);
  dst.Validate(shape);
  BoxingPlan plan{shape, dtype, src, dst, {}};
  if (src == dst) return plan;

  BoxingGraph graph(shape, dtype, src, dst, cost_model, UnitAxes::kEndpointsOnly, cache);
  // Collectives, local steps and broadcasts alone always connect the two layouts (through
  // all-B), and pricing them is cheap; their best path caps the full search, so that costly
  // point-to-point steps are priced only where they might win.
  const std::optional<Path> collective_only = ShortestPath(graph, false, 0.0);
  const double cap =
      collective_only ? collective_only->time : std::numeric_limits<double>::infinity();
  std::optional<Path> best = ShortestPath(graph, true, cap);
  if (!best) throw SbpError("boxing: no path from " + src.ToString() + " to " + dst.ToString());
  int from = graph.source();
  for (auto& [node, step] : best->steps) {
    plan.steps.push_back(detail == BoxingDetail::kTransfers ? graph.Materialize(*step, from, node)
                                                            : *step);
    from = node;
  }
  return plan;
}

std::map<NdSbp, double> BoxingTimesFrom(const Shape& shape, DType dtype, const Layout& src,
                                        const Placement& dst_placement, const CostModel& cost_model,
                                        BoxingCache* cache) {
  src.Validate(shape);
  const Layout any_dst{dst_placement,
                       NdSbp(std::vector<Sbp>(dst_placement.hierarchy().rank(), Sbp::Broadcast()))};
  BoxingGraph graph(shape, dtype, src, any_dst, cost_model, UnitAxes::kEveryLayout, cache);
  // As PlanBoxing, collectives first: their labels bound every node's, so that point-to-point
  // steps are priced only where they might lower one.
  const double infinity = std::numeric_limits<double>::infinity();
  std::vector<Label> collective_only, labels;
  ShortestPath(graph, false, infinity, &collective_only);
  ShortestPath(graph, true, infinity, &labels, &collective_only);
  std::map<NdSbp, double> times;
  for (int node = 0; node < graph.size(); ++node) {
    if (labels[node].steps < 0) continue;
    const Layout& layout = graph.layout(node);
    if (layout.placement == dst_placement) times[layout.nd_sbp] = labels[node].time;
  }
  return times;
}

}  // namespace twinflow::sbp
