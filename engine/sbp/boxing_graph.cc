#include "engine/sbp/boxing_graph.h"

#include "engine/core/error.h"

namespace twinflow::sbp {
namespace {

// Every NdSbp over `mesh_rank` axes with the given per-axis options, in lexicographic order.
std::vector<NdSbp> AllNdSbps(const std::vector<Sbp>& options, int mesh_rank) {
  std::vector<NdSbp> all = {NdSbp(std::vector<Sbp>(mesh_rank, options[0]))};
  for (int a = 0; a < mesh_rank; ++a) {
    std::vector<NdSbp> next;
    for (const NdSbp& prefix : all) {
      for (const Sbp& option : options) {
        NdSbp nd = prefix;
        nd[a] = option;
        next.push_back(nd);
      }
    }
    all = std::move(next);
  }
  return all;
}

}  // namespace

BoxingGraph::BoxingGraph(const Shape& shape, DType dtype, const Layout& src, const Layout& dst,
                         const CostModel& cost_model)
    : shape_(shape), dtype_(dtype), cost_model_(cost_model) {
  for (int k = 0; k < shape.rank(); ++k) axis_options_.push_back(Sbp::Split(k));
  axis_options_.push_back(Sbp::Broadcast());
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
    axis_options_.push_back(Sbp::Partial(op));
  }
  placements_.push_back(src.placement);
  if (!(dst.placement == src.placement)) placements_.push_back(dst.placement);
  index_.resize(placements_.size());
  for (size_t p = 0; p < placements_.size(); ++p) {
    for (NdSbp& nd : AllNdSbps(axis_options_, placements_[p].hierarchy().rank())) {
      index_[p][nd] = static_cast<int>(nodes_.size());
      nodes_.push_back(Node{static_cast<int>(p), std::move(nd)});
    }
  }
  facts_.resize(nodes_.size());
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

const LayoutFacts& BoxingGraph::Facts(int node) {
  if (!facts_[node]) {
    const Node& n = nodes_[node];
    facts_[node] = ComputeFacts(shape_, Layout{placements_[n.placement], n.nd_sbp});
  }
  return *facts_[node];
}

std::vector<std::pair<int, BoxingStep>> BoxingGraph::OutSteps(int node) {
  const StepContext ctx{shape_, dtype_, cost_model_};
  const LayoutFacts& from = Facts(node);
  const int placement = nodes_[node].placement;
  std::vector<std::pair<int, BoxingStep>> out;
  for (int a = 0; a < from.layout.nd_sbp.size(); ++a) {
    for (const Sbp& option : axis_options_) {
      if (auto step = AxisStep(ctx, from, a, option)) {
        out.emplace_back(NodeOf(placement, step->to.nd_sbp), std::move(*step));
      }
    }
  }
  if (from.partial) return out;
  for (int next = 0; next < size(); ++next) {
    if (next == node) continue;
    const LayoutFacts& to = Facts(next);
    if (auto step = SendRecvStep(ctx, from, to)) out.emplace_back(next, std::move(*step));
    if (auto step = BroadcastStep(ctx, from, to)) out.emplace_back(next, std::move(*step));
  }
  return out;
}

}  // namespace twinflow::sbp
