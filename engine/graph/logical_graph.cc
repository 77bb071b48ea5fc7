#include "engine/graph/logical_graph.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "engine/core/error.h"
#include "engine/graph/op_registry.h"

namespace twinflow::graph {
namespace {

std::string OpLabel(const OpNode& op) { return "op '" + op.name + "' (" + op.type + ")"; }

// Validate's checks, in the order it makes them.

// Each tensor names an existing producer that lists it as the output it claims to be.
void CheckTensorProducers(const std::vector<OpNode>& ops, const std::vector<TensorNode>& tensors) {
  const auto n_ops = static_cast<OpId>(ops.size());
  for (const TensorNode& t : tensors) {
    if (t.producer < 0 || t.producer >= n_ops) {
      throw InvalidArgumentError("tensor '" + t.name + "' names unknown producer op id " +
                                 std::to_string(t.producer));
    }
    const OpNode& p = ops[t.producer];
    if (t.output_index < 0 || t.output_index >= static_cast<int>(p.outputs.size()) ||
        p.outputs[t.output_index] != t.id) {
      throw InvalidArgumentError(OpLabel(p) + " does not list tensor '" + t.name +
                                 "' as its output " + std::to_string(t.output_index));
    }
  }
}

// The op's outputs are tensors it produces; its inputs are tensors that exist.
void CheckOpTensors(const OpNode& op, const std::vector<TensorNode>& tensors) {
  const auto n_tensors = static_cast<TensorId>(tensors.size());
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    const TensorId t = op.outputs[i];
    if (t < 0 || t >= n_tensors || tensors[t].producer != op.id) {
      throw InvalidArgumentError(OpLabel(op) + ": output " + std::to_string(i) +
                                 " refers to tensor id " + std::to_string(t) +
                                 " which it does not produce");
    }
  }
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const TensorId t = op.inputs[i];
    if (t < 0 || t >= n_tensors) {
      throw InvalidArgumentError(OpLabel(op) + ": input " + std::to_string(i) +
                                 " refers to unknown tensor id " + std::to_string(t));
    }
  }
}

// The op's type is registered and takes as many inputs as the op has.
void CheckOpType(const OpNode& op, const OpRegistry& registry) {
  if (!registry.Has(op.type)) {
    throw InvalidArgumentError(OpLabel(op) + ": unknown op type '" + op.type + "'");
  }
  const OpDef& def = registry.Find(op.type);
  const int count = static_cast<int>(op.inputs.size());
  if (count < def.min_inputs || (def.max_inputs >= 0 && count > def.max_inputs)) {
    const std::string expected =
        def.max_inputs < 0 ? "at least " + std::to_string(def.min_inputs)
        : def.min_inputs == def.max_inputs
            ? std::to_string(def.min_inputs)
            : std::to_string(def.min_inputs) + " to " + std::to_string(def.max_inputs);
    throw InvalidArgumentError(OpLabel(op) + " takes " + expected + " inputs, got " +
                               std::to_string(count));
  }
}

// The shapes and dtypes recorded for the op's outputs are those its type infers from its
// inputs (ops whose type infers nothing pass).
void CheckInferredOutputs(const OpNode& op, const std::vector<TensorNode>& tensors,
                          const OpRegistry& registry) {
  const OpDef& def = registry.Find(op.type);
  if (!def.infer) return;
  std::vector<TensorMeta> inputs;
  for (TensorId t : op.inputs) inputs.push_back(tensors[t].meta);
  std::vector<TensorMeta> inferred;
  try {
    inferred = def.infer(OpContext{op.type, op.attrs, inputs});
  } catch (const Error& e) {
    RethrowPrefixed(e, OpLabel(op) + ": ");
  }
  if (inferred.size() != op.outputs.size()) {
    throw ShapeError(OpLabel(op) + " has " + std::to_string(op.outputs.size()) +
                     " outputs but its type infers " + std::to_string(inferred.size()));
  }
  for (size_t i = 0; i < inferred.size(); ++i) {
    const TensorNode& out = tensors[op.outputs[i]];
    if (out.meta != inferred[i]) {
      throw ShapeError(OpLabel(op) + ": output " + std::to_string(i) + " ('" + out.name +
                       "') is recorded as " + out.meta.ToString() + " but infers " +
                       inferred[i].ToString());
    }
  }
}

// Each pin fits its tensor's rank and the mesh of its producer's placement.
void CheckPins(const std::vector<OpNode>& ops, const std::vector<TensorNode>& tensors) {
  for (const TensorNode& t : tensors) {
    if (!t.pin) continue;
    const OpNode& p = ops[t.producer];
    try {
      t.pin->layout.Validate(t.meta.shape.rank(), p.placement.hierarchy().rank());
    } catch (const Error& e) {
      RethrowPrefixed(e, "pin of tensor '" + t.name + "' (produced by " + OpLabel(p) + " on " +
                             p.placement.ToString() + "): ");
    }
  }
}

// Ops read only from ops on their own device type: anything else needs a copy op between.
void CheckDeviceTypes(const std::vector<OpNode>& ops, const std::vector<TensorNode>& tensors) {
  for (const OpNode& op : ops) {
    for (TensorId t : op.inputs) {
      const OpNode& p = ops[tensors[t].producer];
      if (p.placement.device_type() != op.placement.device_type()) {
        throw InvalidArgumentError(
            OpLabel(op) + " on " + op.placement.ToString() + " reads tensor '" + tensors[t].name +
            "' from " + OpLabel(p) + " on " + p.placement.ToString() +
            ": different device types need an explicit copy op between them");
      }
    }
  }
}

}  // namespace

std::string TensorMeta::ToString() const { return DTypeName(dtype) + shape.ToString(); }

OpId LogicalGraph::AddOp(std::string name, std::string type, Attrs attrs,
                         std::vector<TensorId> inputs, const std::vector<TensorMeta>& outputs,
                         sbp::Placement placement, int32_t stage) {
  if (name.empty()) throw InvalidArgumentError("an op of type '" + type + "' has an empty name");
  if (op_index_.count(name)) throw InvalidArgumentError("duplicate op name '" + name + "'");
  const OpId id = static_cast<OpId>(ops_.size());
  std::vector<std::string> tensor_names;
  for (size_t i = 0; i < outputs.size(); ++i) {
    tensor_names.push_back(outputs.size() == 1 ? name : name + "/out" + std::to_string(i));
    if (tensor_index_.count(tensor_names.back())) {
      throw InvalidArgumentError("op '" + name + "': tensor name '" + tensor_names.back() +
                                 "' is already taken");
    }
  }
  if (stage < 0) {
    throw InvalidArgumentError("op '" + name + "': pipeline stage " + std::to_string(stage) +
                               " is negative");
  }
  OpNode op{
      id,   name, std::move(type), std::move(attrs), std::move(inputs), {}, std::move(placement),
      stage};
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorId t = static_cast<TensorId>(tensors_.size());
    tensors_.push_back(TensorNode{t, tensor_names[i], outputs[i], id, static_cast<int>(i), {}});
    tensor_index_[tensor_names[i]] = t;
    op.outputs.push_back(t);
  }
  for (TensorId t : op.inputs) {
    std::vector<OpId>& consumers = consumers_[t];
    if (consumers.empty() || consumers.back() != id) consumers.push_back(id);
  }
  op_index_[name] = id;
  ops_.push_back(std::move(op));
  return id;
}

void LogicalGraph::MarkRecomputed(OpId id) {
  op(id);  // range check
  ops_[id].recomputed = true;
}

void LogicalGraph::MarkWeightGradient(OpId id) {
  op(id);  // range check
  ops_[id].weight_gradient = true;
}

bool TensorPin::IsFree(int axis) const {
  return std::find(free_axes.begin(), free_axes.end(), axis) != free_axes.end();
}

bool TensorPin::Allows(const sbp::NdSbp& nd, const Shape& hierarchy) const {
  if (nd.size() != layout.size()) return false;
  for (int a = 0; a < nd.size(); ++a) {
    if (IsFree(a)) continue;
    const bool single = a < hierarchy.rank() && hierarchy[a] == 1;
    const sbp::Sbp want = single ? sbp::Sbp::Broadcast() : layout[a];
    const sbp::Sbp have = single ? sbp::Sbp::Broadcast() : nd[a];
    if (!(want == have)) return false;
  }
  return true;
}

std::string TensorPin::ToString() const {
  if (free_axes.empty()) return layout.ToString();
  std::string text = "(";
  for (int a = 0; a < layout.size(); ++a) {
    text += (a ? "," : "") + (IsFree(a) ? std::string("*") : layout[a].ToString());
  }
  return text + ")";
}

void LogicalGraph::Pin(TensorId tensor, sbp::NdSbp nd_sbp, std::vector<int> free_axes,
                       bool binds_consumers) {
  Pin(tensor, TensorPin{std::move(nd_sbp), std::move(free_axes), binds_consumers});
}

void LogicalGraph::Pin(TensorId tensor, TensorPin pin) {
  sbp::NdSbp& nd_sbp = pin.layout;
  std::vector<int>& free_axes = pin.free_axes;
  const TensorNode& node = this->tensor(tensor);
  const OpNode& producer = op(node.producer);
  const int mesh_rank = producer.placement.hierarchy().rank();
  try {
    nd_sbp.Validate(node.meta.shape.rank(), mesh_rank);
    for (int a : free_axes) {
      if (a < 0 || a >= mesh_rank) {
        throw SbpError("free mesh axis " + std::to_string(a) + " is out of range for " +
                       std::to_string(mesh_rank) + " mesh axes");
      }
    }
  } catch (const Error& e) {
    RethrowPrefixed(e, "pin of tensor '" + node.name + "' (produced by op '" + producer.name +
                           "' on " + producer.placement.ToString() + "): ");
  }
  std::sort(free_axes.begin(), free_axes.end());
  free_axes.erase(std::unique(free_axes.begin(), free_axes.end()), free_axes.end());
  tensors_[tensor].pin = std::move(pin);
}

const OpNode& LogicalGraph::op(OpId id) const {
  if (id < 0 || id >= static_cast<OpId>(ops_.size())) {
    throw InvalidArgumentError("unknown op id " + std::to_string(id));
  }
  return ops_[id];
}

const TensorNode& LogicalGraph::tensor(TensorId id) const {
  if (id < 0 || id >= static_cast<TensorId>(tensors_.size())) {
    throw InvalidArgumentError("unknown tensor id " + std::to_string(id));
  }
  return tensors_[id];
}

std::optional<OpId> LogicalGraph::FindOp(const std::string& name) const {
  auto it = op_index_.find(name);
  if (it == op_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<TensorId> LogicalGraph::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  if (it == tensor_index_.end()) return std::nullopt;
  return it->second;
}

std::vector<OpId> LogicalGraph::Consumers(TensorId tensor) const {
  auto it = consumers_.find(tensor);
  if (it == consumers_.end()) return {};
  return it->second;
}

std::vector<OpId> LogicalGraph::TopologicalOrder() const {
  const size_t n = ops_.size();
  std::vector<int> pending(n, 0);  // inputs whose producer has not been emitted yet
  std::vector<std::vector<OpId>> successors(n);
  for (const OpNode& op : ops_) {
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const TensorId t = op.inputs[i];
      if (t < 0 || t >= static_cast<TensorId>(tensors_.size())) {
        throw InvalidArgumentError(OpLabel(op) + ": input " + std::to_string(i) +
                                   " refers to unknown tensor id " + std::to_string(t));
      }
      const OpId producer = tensors_[t].producer;
      if (producer < 0 || producer >= static_cast<OpId>(n)) continue;
      ++pending[op.id];
      successors[producer].push_back(op.id);
    }
  }
  // A min-heap on op id makes the order independent of insertion details.
  std::priority_queue<OpId, std::vector<OpId>, std::greater<OpId>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(static_cast<OpId>(i));
  }
  std::vector<OpId> order;
  order.reserve(n);
  while (!ready.empty()) {
    const OpId id = ready.top();
    ready.pop();
    order.push_back(id);
    for (OpId s : successors[id]) {
      if (--pending[s] == 0) ready.push(s);
    }
  }
  if (order.size() == n) return order;

  // Every op left has an input from another op left; walking back along those must repeat.
  OpId current = static_cast<OpId>(
      std::find_if(pending.begin(), pending.end(), [](int p) { return p > 0; }) - pending.begin());
  std::vector<OpId> path;
  std::vector<int> seen_at(n, -1);
  while (seen_at[current] < 0) {
    seen_at[current] = static_cast<int>(path.size());
    path.push_back(current);
    for (TensorId t : ops_[current].inputs) {
      const OpId p = tensors_[t].producer;
      if (p >= 0 && p < static_cast<OpId>(n) && pending[p] > 0) {
        current = p;
        break;
      }
    }
  }
  std::vector<OpId> cycle(path.begin() + seen_at[current], path.end());
  std::reverse(cycle.begin() + 1, cycle.end());  // in data-flow order
  std::string text;
  for (OpId id : cycle) text += "op '" + ops_[id].name + "' -> ";
  text += "op '" + ops_[cycle.front()].name + "'";
  throw InvalidArgumentError("graph has a cycle through " + OpLabel(ops_[cycle.front()]) + ": " +
                             text);
}

void LogicalGraph::Validate(const OpRegistry& registry) const {
  // Ids first, so the later checks may index by them; the shapes in data-flow order, which
  // also rejects cycles.
  CheckTensorProducers(ops_, tensors_);
  for (const OpNode& op : ops_) {
    CheckOpTensors(op, tensors_);
    CheckOpType(op, registry);
  }
  for (OpId id : TopologicalOrder()) CheckInferredOutputs(ops_[id], tensors_, registry);
  CheckPins(ops_, tensors_);
  CheckDeviceTypes(ops_, tensors_);
}

}  // namespace twinflow::graph
