#include "engine/sbp/boxing_graph.h"

#include <algorithm>
#include <cstdio>

#include "engine/core/error.h"

namespace twinflow::sbp {
namespace {

// Every NdSbp with axis a taking one of options[a], in lexicographic order.
std::vector<NdSbp> AllNdSbps(const std::vector<std::vector<Sbp>>& options) {
  std::vector<NdSbp> all = {NdSbp(std::vector<Sbp>(options.size(), Sbp::Broadcast()))};
  for (size_t a = 0; a < options.size(); ++a) {
    std::vector<NdSbp> next;
    for (const NdSbp& prefix : all) {
      for (const Sbp& option : options[a]) {
        NdSbp nd = prefix;
        nd[static_cast<int>(a)] = option;
        next.push_back(nd);
      }
    }
    all = std::move(next);
  }
  return all;
}

// An axis of extent 1 holds the whole tensor on one device whatever its Sbp, so changing it
// is a free local step and no route needs any value there but the endpoints' own: with
// kEndpointsOnly it takes only those (the search space loses a factor of 6 per such axis).
std::vector<std::vector<Sbp>> OptionsPerAxis(const std::vector<Sbp>& every, const Placement& p,
                                             const Layout& src, const Layout& dst,
                                             UnitAxes unit_axes) {
  std::vector<std::vector<Sbp>> options;
  for (int a = 0; a < p.hierarchy().rank(); ++a) {
    if (p.hierarchy()[a] != 1 || unit_axes == UnitAxes::kEveryLayout) {
      options.push_back(every);
      continue;
    }
    std::vector<Sbp> ends;
    for (const Layout* end : {&src, &dst}) {
      const Sbp& sbp = end->nd_sbp[a];
      if (end->placement == p && std::find(ends.begin(), ends.end(), sbp) == ends.end())
        ends.push_back(sbp);
    }
    options.push_back(ends);
  }
  return options;
}

}  // namespace

BoxingGraph::BoxingGraph(const Shape& shape, DType dtype, const Layout& src, const Layout& dst,
                         const CostModel& cost_model, UnitAxes unit_axes, BoxingCache* cache)
    : shape_(shape),
      dtype_(dtype),
      cost_model_(cost_model),
      own_cache_(cache ? nullptr : std::make_unique<BoxingCache>()),
      cache_(cache ? cache : own_cache_.get()) {
  std::vector<Sbp> every;
  for (int k = 0; k < shape.rank(); ++k) every.push_back(Sbp::Split(k));
  every.push_back(Sbp::Broadcast());
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
    every.push_back(Sbp::Partial(op));
  }
  placements_.push_back(src.placement);
  if (!(dst.placement == src.placement)) placements_.push_back(dst.placement);
  double layouts = 0;
  for (const Placement& p : placements_) {
    options_.push_back(OptionsPerAxis(every, p, src, dst, unit_axes));
    double product = 1;
    for (const auto& axis : options_.back()) product *= static_cast<double>(axis.size());
    layouts += product;
  }
  // Point-to-point steps join every pair of layouts, so the work grows with their square.
  if (layouts > kMaxBoxingLayouts) {
    char count[32];
    std::snprintf(count, sizeof(count), "%.6g", layouts);
    throw SbpError("boxing: from " + src.ToString() + " to " + dst.ToString() +
                   " the search would span " + std::string(count) +
                   " layouts, more than its cap of " + std::to_string(kMaxBoxingLayouts) +
                   " (each mesh axis of extent above 1 multiplies them by " +
                   std::to_string(every.size()) + ")");
  }
  index_.resize(placements_.size());
  for (size_t p = 0; p < placements_.size(); ++p) {
    for (NdSbp& nd : AllNdSbps(options_[p])) {
      index_[p][nd] = static_cast<int>(nodes_.size());
      nodes_.push_back(Node{static_cast<int>(p), std::move(nd)});
    }
  }
  facts_.resize(nodes_.size());
  axis_steps_.resize(nodes_.size());
  local_index_.resize(placements_.size());
  for (size_t p = 0; p < placements_.size(); ++p) {
    for (size_t q = 0; q < placements_.size(); ++q) {
      local_index_[p].push_back(SourceIndexOfDestinations(placements_[p], placements_[q]));
    }
  }
  source_ = NodeOf(0, src.nd_sbp);
  target_ = NodeOf(static_cast<int>(placements_.size()) - 1, dst.nd_sbp);
}

int BoxingGraph::NodeOf(int placement, const NdSbp& nd_sbp) const {
  const auto it = index_[placement].find(nd_sbp);
  if (it == index_[placement].end()) {
    throw SbpError("boxing: layout " + nd_sbp.ToString() + " is not in the search graph");
  }
  return it->second;
}

const Layout& BoxingGraph::layout(int node) { return Facts(node).layout; }

const BoxingCache::FactsPtr& BoxingGraph::FactsOf(int node) {
  if (!facts_[node]) {
    const Node& n = nodes_[node];
    facts_[node] = cache_->Facts(shape_, Layout{placements_[n.placement], n.nd_sbp});
  }
  return facts_[node];
}

const std::vector<std::pair<int, BoxingCache::StepPtr>>& BoxingGraph::AxisSteps(int node) {
  if (axis_steps_[node]) return *axis_steps_[node];
  const StepContext ctx{shape_, dtype_, cost_model_};
  std::vector<std::pair<int, BoxingCache::StepPtr>> steps;
  const int placement = nodes_[node].placement;
  const NdSbp& nd_sbp = nodes_[node].nd_sbp;
  const BoxingCache::FactsPtr& from = FactsOf(node);  // the graph holds it: a stable reference
  for (int a = 0; a < nd_sbp.size(); ++a) {
    for (const Sbp& option : options_[placement][a]) {
      if (option == nd_sbp[a]) continue;
      NdSbp changed = nd_sbp;
      changed[a] = option;
      const int next = NodeOf(placement, changed);
      // Facts first: computing them may renew the cache, and with it the steps found.
      const BoxingCache::FactsPtr& to = FactsOf(next);
      const BoxingCache::StepPtr* known = cache_->FindStep(from, to, dtype_, a);
      BoxingCache::StepPtr step =
          known ? *known : cache_->PutStep(from, to, dtype_, a, AxisStep(ctx, *from, *to, a));
      if (step) steps.emplace_back(next, std::move(step));
    }
  }
  axis_steps_[node] = std::move(steps);
  return *axis_steps_[node];
}

void BoxingGraph::VisitOutSteps(int node, const std::function<double(int)>& budget,
                                const StepVisitor& visit) {
  const StepContext ctx{shape_, dtype_, cost_model_};
  for (const auto& [next, step] : AxisSteps(node)) visit(next, step);
  if (IsPartial(node)) return;
  const int placement = nodes_[node].placement;
  for (int next = 0; next < size(); ++next) {
    if (next == node || IsPartial(next)) continue;
    const BoxingCache::FactsPtr& from = FactsOf(node);
    const BoxingCache::FactsPtr& to = FactsOf(next);
    if (auto step = BroadcastStep(ctx, *from, *to)) {
      visit(next, std::make_shared<const BoxingStep>(std::move(*step)));
    }
    const double limit = budget(next);
    if (limit < 0) continue;
    // A send-recv priced by an earlier search is taken where it can help; else it is priced
    // only when its lower bound allows (a step over the limit cannot improve a label: Reach).
    if (const auto* known = cache_->FindStep(from, to, dtype_, BoxingCache::kSendRecv)) {
      if (*known && (*known)->time <= limit) visit(next, *known);
      continue;
    }
    if (cache_->SendRecvBound(from, to, dtype_) > limit) continue;
    const std::vector<int64_t>& local = local_index_[placement][nodes_[next].placement];
    if (const double bound = SendRecvLowerBound(ctx, *from, *to, local, limit); bound > limit) {
      cache_->RaiseSendRecvBound(from, to, dtype_, bound);
      continue;
    }
    const BoxingCache::StepPtr step =
        cache_->PutStep(from, to, dtype_, BoxingCache::kSendRecv,
                        SendRecvStep(ctx, *from, *to, local, /*with_transfers=*/false));
    if (step) visit(next, step);
  }
}

BoxingStep BoxingGraph::Materialize(BoxingStep step, int from, int to) {
  if (step.kind != BoxingStepKind::kSendRecv) return step;
  const StepContext ctx{shape_, dtype_, cost_model_};
  const std::vector<int64_t>& local = local_index_[nodes_[from].placement][nodes_[to].placement];
  return *SendRecvStep(ctx, Facts(from), Facts(to), local, /*with_transfers=*/true);
}

bool BoxingGraph::IsPartial(int node) const {
  const Node& n = nodes_[node];
  const Shape& hierarchy = placements_[n.placement].hierarchy();
  for (int a = 0; a < hierarchy.rank(); ++a) {
    if (n.nd_sbp[a].is_partial() && hierarchy[a] > 1) return true;
  }
  return false;
}

}  // namespace twinflow::sbp
