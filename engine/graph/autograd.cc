#include "engine/graph/autograd.h"

#include <optional>
#include <set>
#include <string>

#include "engine/core/error.h"
#include "engine/graph/recompute.h"

namespace twinflow::graph {
namespace {

// Tensors that depend on some tensor of `wrt` (wrt included), by a forward sweep.
std::vector<bool> DependOnWrt(const LogicalGraph& graph, const std::vector<OpId>& order,
                              const std::vector<TensorId>& wrt) {
  std::vector<bool> reached(graph.tensors().size(), false);
  for (TensorId t : wrt) reached[t] = true;
  for (OpId id : order) {
    const OpNode& op = graph.op(id);
    bool any = false;
    for (TensorId t : op.inputs) any = any || reached[t];
    if (any) {
      for (TensorId t : op.outputs) reached[t] = true;
    }
  }
  return reached;
}

// Tensors that `loss` depends on (loss included), by a backward sweep.
std::vector<bool> LossDependsOn(const LogicalGraph& graph, const std::vector<OpId>& order,
                                TensorId loss) {
  std::vector<bool> needed(graph.tensors().size(), false);
  needed[loss] = true;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const OpNode& op = graph.op(*it);
    bool any = false;
    for (TensorId t : op.outputs) any = any || needed[t];
    if (any) {
      for (TensorId t : op.inputs) needed[t] = true;
    }
  }
  return needed;
}

// Sums the contributions in arrival order (deterministic), on the placement already set.
std::optional<TensorId> Sum(GraphBuilder& builder, const std::vector<TensorId>& parts) {
  if (parts.empty()) return std::nullopt;
  TensorId acc = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) acc = builder.Add1("add", {acc, parts[i]});
  return acc;
}

void CheckTensor(const LogicalGraph& graph, TensorId t, const std::string& what) {
  if (t < 0 || t >= static_cast<TensorId>(graph.tensors().size())) {
    throw InvalidArgumentError("autograd: " + what + " tensor id " + std::to_string(t) +
                               " is not in the graph");
  }
}

// Forward tensors computed from the data (descendants of the graph's inputs): their gradients
// are activation gradients, which an earlier pipeline stage waits for.
std::vector<bool> DependOnData(const GraphBuilder& builder, const std::vector<OpId>& order) {
  const LogicalGraph& graph = builder.graph();
  std::vector<TensorId> data;
  for (OpId id : order) {
    const OpNode& op = graph.op(id);
    if (builder.registry().Find(op.type).role != OpRole::kInput) continue;
    data.insert(data.end(), op.outputs.begin(), op.outputs.end());
  }
  return DependOnWrt(graph, order, data);
}

// Zero-bubble pipelines split the backward pass (Qi et al. 2024): the ops some activation
// gradient depends on, and the rest, which only weight gradients need (marked here).
void MarkWeightGradients(LogicalGraph& graph, OpId first,
                         const std::vector<TensorId>& activation_gradients) {
  std::vector<bool> needed(graph.tensors().size(), false);
  for (TensorId t : activation_gradients) needed[t] = true;
  for (auto id = static_cast<OpId>(graph.ops().size()) - 1; id >= first; --id) {
    const OpNode& op = graph.op(id);  // ops are appended after their inputs' producers
    bool activation = false;
    for (TensorId t : op.outputs) activation = activation || needed[t];
    if (activation) {
      for (TensorId t : op.inputs) needed[t] = true;
    } else {
      graph.MarkWeightGradient(id);
    }
  }
}

void CheckLoss(const LogicalGraph& graph, TensorId loss, const std::vector<TensorId>& wrt) {
  CheckTensor(graph, loss, "loss");
  for (TensorId t : wrt) CheckTensor(graph, t, "wrt");
  const TensorNode& node = graph.tensor(loss);
  if (node.meta.shape.rank() != 0 || !IsFloating(node.meta.dtype)) {
    throw InvalidArgumentError("autograd: loss '" + node.name +
                               "' must be a floating scalar (shape []), got " +
                               node.meta.ToString());
  }
}

// AddBackward's pass; with recomputation, only the recomputed ops in `keep` (all when null),
// reporting those emitted in `emitted`.
std::map<TensorId, TensorId> Backward(GraphBuilder& builder, TensorId loss,
                                      const std::vector<TensorId>& wrt,
                                      const std::vector<std::vector<OpId>>& recompute,
                                      const std::set<std::string>* keep,
                                      std::vector<OpId>* emitted) {
  const LogicalGraph& graph = builder.graph();
  CheckLoss(graph, loss, wrt);
  const TensorNode& loss_node = graph.tensor(loss);

  const auto first_backward_op = static_cast<OpId>(graph.ops().size());
  const std::vector<OpId> order = graph.TopologicalOrder();  // forward ops only
  Recomputation recomputation(builder, recompute, order, keep);
  const std::vector<bool> from_wrt = DependOnWrt(graph, order, wrt);
  const std::vector<bool> to_loss = LossDependsOn(graph, order, loss);
  const std::vector<bool> from_data = DependOnData(builder, order);
  std::vector<TensorId> activation_gradients;
  const GraphBuilder::Site saved = builder.site();

  // contributions[t]: gradient parts of tensor t, summed when t's producer is reached.
  std::map<TensorId, std::vector<TensorId>> contributions;
  if (from_wrt[loss]) {
    builder.PlaceLike(graph.op(loss_node.producer));
    contributions[loss].push_back(
        builder.Add1("ones_like", {loss}, {}, loss_node.name + "/grad_seed"));
  }

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const OpNode op = graph.op(*it);  // a copy: adding ops may move the graph's storage
    bool relevant = false;
    for (TensorId t : op.inputs) relevant = relevant || (from_wrt[t] && to_loss[t]);
    if (!relevant) continue;
    builder.PlaceLike(op);
    std::vector<std::optional<TensorId>> dy;
    bool any = false;
    for (TensorId t : op.outputs) {
      auto found = contributions.find(t);
      dy.push_back(found == contributions.end() ? std::nullopt : Sum(builder, found->second));
      any = any || dy.back().has_value();
    }
    if (!any) continue;
    const OpDef& def = builder.registry().Find(op.type);
    if (!def.gradient) {
      builder.SetSite(saved);
      throw InvalidArgumentError("autograd: op '" + op.name + "' (" + op.type +
                                 ") is not differentiable, but the loss needs its gradient");
    }
    const OpNode reads = recomputation.Reads(builder, op, dy);
    const std::vector<std::optional<TensorId>> dx = def.gradient(builder, reads, dy);
    if (dx.size() != op.inputs.size()) {
      builder.SetSite(saved);
      throw InvalidArgumentError("autograd: the gradient of op '" + op.name + "' (" + op.type +
                                 ") returned " + std::to_string(dx.size()) + " entries for " +
                                 std::to_string(op.inputs.size()) + " inputs");
    }
    for (size_t i = 0; i < dx.size(); ++i) {
      const TensorId t = op.inputs[i];
      if (!dx[i] || !from_wrt[t] || !to_loss[t]) continue;
      contributions[t].push_back(*dx[i]);
      if (from_data[t]) activation_gradients.push_back(*dx[i]);
    }
  }

  std::map<TensorId, TensorId> result;
  for (TensorId t : wrt) {
    if (result.count(t)) continue;
    const TensorNode& node = builder.graph().tensor(t);
    if (node.producer >= 0) builder.PlaceLike(builder.graph().op(node.producer));
    auto found = contributions.find(t);
    std::optional<TensorId> grad =
        found == contributions.end() ? std::nullopt : Sum(builder, found->second);
    result[t] = grad ? *grad : builder.Add1("zeros_like", {t}, {}, node.name + "/zero_grad");
  }
  builder.SetSite(saved);
  MarkWeightGradients(builder.graph(), first_backward_op, activation_gradients);
  if (!builder.graph().IsBackward(first_backward_op))
    builder.graph().MarkBackwardFrom(first_backward_op);
  if (emitted) *emitted = recomputation.emitted();
  return result;
}

}  // namespace

std::map<TensorId, TensorId> AddBackward(GraphBuilder& builder, TensorId loss,
                                         const std::vector<TensorId>& wrt,
                                         const std::vector<std::vector<OpId>>& recompute) {
  if (recompute.empty()) return Backward(builder, loss, wrt, {}, nullptr, nullptr);
  // A first pass on a copy finds which recomputed ops the gradients read (a segment's last
  // ops often feed nothing the gradients need); the second emits only those.
  GraphBuilder trial = builder;
  std::vector<OpId> emitted;
  Backward(trial, loss, wrt, recompute, nullptr, &emitted);
  const std::set<std::string> keep = ReadRecomputations(trial.graph(), emitted);
  return Backward(builder, loss, wrt, recompute, &keep, nullptr);
}

}  // namespace twinflow::graph
