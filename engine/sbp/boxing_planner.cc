#include "engine/sbp/boxing_planner.h"

#include <algorithm>
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

}  // namespace

BoxingPlan PlanBoxing(const Shape& shape, DType dtype, const Layout& src, const Layout& dst,
                      const CostModel& cost_model) {
  src.Validate(shape);
  dst.Validate(shape);
  BoxingPlan plan{shape, dtype, src, dst, {}};
  if (src == dst) return plan;

  BoxingGraph graph(shape, dtype, src, dst, cost_model);
  std::vector<Label> label(graph.size());
  std::vector<int> previous(graph.size(), -1);
  std::vector<std::optional<BoxingStep>> via(graph.size());
  std::vector<bool> done(graph.size(), false);
  // Min-heap on (time, steps, node): the node id breaks exact ties deterministically.
  using Entry = std::tuple<double, int, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> frontier;
  label[graph.source()] = Label{0.0, 0};
  frontier.emplace(0.0, 0, graph.source());
  while (!frontier.empty()) {
    const auto [time, steps, node] = frontier.top();
    frontier.pop();
    if (done[node]) continue;
    done[node] = true;
    if (node == graph.target()) break;
    for (auto& [next, step] : graph.OutSteps(node)) {
      if (done[next]) continue;
      const Label candidate{label[node].time + step.time, label[node].steps + 1};
      if (!Better(candidate, label[next])) continue;
      label[next] = candidate;
      previous[next] = node;
      via[next] = std::move(step);
      frontier.emplace(candidate.time, candidate.steps, next);
    }
  }
  if (!done[graph.target()]) {
    throw SbpError("boxing: no path from " + src.ToString() + " to " + dst.ToString());
  }
  for (int node = graph.target(); node != graph.source(); node = previous[node]) {
    plan.steps.push_back(std::move(*via[node]));
  }
  std::reverse(plan.steps.begin(), plan.steps.end());
  return plan;
}

}  // namespace twinflow::sbp
