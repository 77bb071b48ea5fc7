#include "engine/interpreter/reference_interpreter.h"

#include <utility>

#include "engine/core/error.h"

namespace twinflow::interpreter {
namespace {

using graph::OpId;
using graph::OpNode;
using graph::TensorId;

std::string OpLabel(const OpNode& op) { return "op '" + op.name + "' (" + op.type + ")"; }

std::string MetaText(const Tensor& t) { return DTypeName(t.dtype()) + t.shape().ToString(); }

// Kernels are keyed by their first input's dtype; source ops by their first output's.
kernels::KernelKey KeyFor(const graph::LogicalGraph& graph, const OpNode& op) {
  DType dtype = DType::kF32;
  if (!op.inputs.empty()) {
    dtype = graph.tensor(op.inputs[0]).meta.dtype;
  } else if (!op.outputs.empty()) {
    dtype = graph.tensor(op.outputs[0]).meta.dtype;
  }
  return kernels::KernelKey{op.type, DeviceType::kCpu, dtype};
}

// Runs op's kernel on `inputs`, returning freshly allocated outputs.
std::vector<Tensor> RunKernel(const graph::LogicalGraph& graph,
                              const kernels::KernelRegistry& registry, const OpNode& op,
                              std::vector<const Tensor*> inputs) {
  std::vector<Tensor> outputs;
  try {
    const kernels::Kernel& kernel = registry.Find(KeyFor(graph, op));
    for (TensorId t : op.outputs) {
      const graph::TensorMeta& meta = graph.tensor(t).meta;
      outputs.emplace_back(meta.shape, meta.dtype);
    }
    std::vector<Tensor*> output_ptrs;
    for (Tensor& t : outputs) output_ptrs.push_back(&t);
    kernel(kernels::WholeTensorContext(op.attrs, std::move(inputs), std::move(output_ptrs)));
  } catch (const Error& e) {
    RethrowPrefixed(e, OpLabel(op) + ": ");
  }
  return outputs;
}

// Feeds name input ops and fetches name tensors of the graph, checked before any work.
void CheckStepRequest(const graph::LogicalGraph& graph, const std::map<std::string, Tensor>& feeds,
                      const std::vector<TensorId>& fetch) {
  for (const auto& [name, value] : feeds) {
    const std::optional<OpId> id = graph.FindOp(name);
    if (!id || graph.op(*id).type != "input") {
      throw InvalidArgumentError("feed '" + name + "' matches no input op");
    }
  }
  for (TensorId t : fetch) graph.tensor(t);
}

// When a step may drop each tensor: after its last reader (a position in the order), unless
// it is kept to the end.
struct Lifetimes {
  std::vector<size_t> last_use;
  std::vector<bool> keep;
};

// A tensor is dropped after its last reader unless it is fetched or read by an assign, which
// runs after the whole step.
Lifetimes TensorLifetimes(const graph::LogicalGraph& graph, const std::vector<OpId>& order,
                          const std::vector<TensorId>& fetch) {
  const size_t num_tensors = graph.tensors().size();
  Lifetimes life{std::vector<size_t>(num_tensors, 0), std::vector<bool>(num_tensors, false)};
  for (TensorId t : fetch) life.keep[t] = true;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const OpNode& op = graph.op(order[pos]);
    for (TensorId t : op.inputs) {
      life.last_use[t] = pos;
      if (op.type == "assign") life.keep[t] = true;
    }
  }
  return life;
}

// The value of an input op (its feed, which must match its shape and dtype) or of a variable
// op (its current value).
Tensor SourceValue(const graph::LogicalGraph& graph, const OpNode& op,
                   const std::map<std::string, Tensor>& feeds,
                   const std::map<std::string, Tensor>& variables) {
  if (op.outputs.size() != 1) {
    throw InvalidArgumentError(OpLabel(op) + " must have exactly one output");
  }
  const graph::TensorMeta& meta = graph.tensor(op.outputs[0]).meta;
  if (op.type == "variable") return variables.at(op.name);
  auto it = feeds.find(op.name);
  if (it == feeds.end()) throw InvalidArgumentError(OpLabel(op) + ": no feed given");
  if (it->second.shape() != meta.shape || it->second.dtype() != meta.dtype) {
    throw InvalidArgumentError(OpLabel(op) + ": feed is " + MetaText(it->second) +
                               " but the input is " + meta.ToString());
  }
  return it->second;
}

// The new value of each variable the step's assigns update, by variable name; each must come
// from a variable op and fit it.
std::map<std::string, Tensor> AssignUpdates(const graph::LogicalGraph& graph,
                                            const std::vector<const OpNode*>& assigns,
                                            const std::vector<Tensor>& values,
                                            const std::map<std::string, Tensor>& variables) {
  std::map<std::string, Tensor> updates;
  for (const OpNode* op : assigns) {
    const OpNode& producer = graph.op(graph.tensor(op->inputs[0]).producer);
    if (producer.type != "variable") {
      throw InvalidArgumentError(OpLabel(*op) + ": input 0 comes from " + OpLabel(producer) +
                                 ", not from a variable");
    }
    const Tensor& value = values[op->inputs[1]];
    const Tensor& current = variables.at(producer.name);
    if (value.shape() != current.shape() || value.dtype() != current.dtype()) {
      throw InvalidArgumentError(OpLabel(*op) + ": value " + MetaText(value) +
                                 " does not fit variable '" + producer.name + "' of " +
                                 MetaText(current));
    }
    updates[producer.name] = value;
  }
  return updates;
}

}  // namespace

ReferenceInterpreter::ReferenceInterpreter(const graph::LogicalGraph& graph,
                                           const kernels::KernelRegistry& kernels)
    : graph_(graph), kernels_(kernels), order_(graph.TopologicalOrder()) {
  for (OpId id : order_) {
    const OpNode& op = graph_.op(id);
    if (op.type != "variable") continue;
    if (op.outputs.size() != 1) {
      throw InvalidArgumentError(OpLabel(op) + " must have exactly one output");
    }
    variables_[op.name] = std::move(RunKernel(graph_, kernels_, op, {})[0]);
  }
}

std::map<TensorId, Tensor> ReferenceInterpreter::Step(const std::map<std::string, Tensor>& feeds,
                                                      const std::vector<TensorId>& fetch) {
  CheckStepRequest(graph_, feeds, fetch);  // unknown ids fail before any work
  const Lifetimes life = TensorLifetimes(graph_, order_, fetch);
  std::vector<Tensor> values(graph_.tensors().size());
  std::vector<const OpNode*> assigns;
  for (size_t pos = 0; pos < order_.size(); ++pos) {
    const OpNode& op = graph_.op(order_[pos]);
    if (op.type == "input" || op.type == "variable") {
      values[op.outputs.at(0)] = SourceValue(graph_, op, feeds, variables_);
      continue;
    }
    if (op.type == "assign") {
      if (op.inputs.size() != 2) {
        throw InvalidArgumentError(OpLabel(op) + " needs 2 inputs (variable, value)");
      }
      assigns.push_back(&op);
      continue;
    }
    std::vector<const Tensor*> inputs;
    for (TensorId t : op.inputs) inputs.push_back(&values[t]);
    std::vector<Tensor> outputs = RunKernel(graph_, kernels_, op, std::move(inputs));
    for (size_t i = 0; i < outputs.size(); ++i) values[op.outputs[i]] = std::move(outputs[i]);
    for (TensorId t : op.inputs) {
      if (life.last_use[t] == pos && !life.keep[t]) values[t] = Tensor();
    }
  }
  // Every update of the step reads the old values, so assigns land only now.
  for (auto& [name, value] : AssignUpdates(graph_, assigns, values, variables_)) {
    variables_[name] = std::move(value);
  }
  std::map<TensorId, Tensor> result;
  for (TensorId t : fetch) result[t] = values[t];
  return result;
}

const Tensor& ReferenceInterpreter::variable(const std::string& name) const {
  auto it = variables_.find(name);
  if (it == variables_.end()) throw InvalidArgumentError("unknown variable '" + name + "'");
  return it->second;
}

void ReferenceInterpreter::set_variable(const std::string& name, Tensor value) {
  auto it = variables_.find(name);
  if (it == variables_.end()) throw InvalidArgumentError("unknown variable '" + name + "'");
  if (value.shape() != it->second.shape() || value.dtype() != it->second.dtype()) {
    throw InvalidArgumentError("variable '" + name + "' is " + MetaText(it->second) +
                               ", cannot set it to " + MetaText(value));
  }
  it->second = std::move(value);
}

}  // namespace twinflow::interpreter
