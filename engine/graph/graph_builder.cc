#include "engine/graph/graph_builder.h"

#include "engine/core/error.h"

namespace twinflow::graph {
namespace {}  // namespace

GraphBuilder::GraphBuilder(const OpRegistry& registry, sbp::Placement placement)
    : registry_(registry), site_{std::move(placement), 0} {}

TensorId GraphBuilder::Input(const std::string& name, Shape shape, DType dtype) {
  Attrs attrs{{"shape", shape.dims()}, {"dtype", std::string(DTypeName(dtype))}};
  return Add1("input", {}, std::move(attrs), name);
}

TensorId GraphBuilder::Variable(const std::string& name, Shape shape, DType dtype, Attrs init) {
  init.Set("shape", shape.dims());
  init.Set("dtype", std::string(DTypeName(dtype)));
  return Add1("variable", {}, std::move(init), name);
}

std::vector<TensorId> GraphBuilder::Add(const std::string& type, std::vector<TensorId> inputs,
                                        Attrs attrs, std::string name) {
  if (autocast_) inputs = Autocast(type, std::move(inputs));
  if (name.empty()) name = type + "_" + std::to_string(graph_.ops().size());
  const std::string label = "op '" + name + "' (" + type + "): ";
  std::vector<TensorMeta> metas;
  std::vector<TensorMeta> outputs;
  try {
    const OpDef& def = registry_.Find(type);
    const int count = static_cast<int>(inputs.size());
    if (count < def.min_inputs || (def.max_inputs >= 0 && count > def.max_inputs)) {
      throw InvalidArgumentError(
          "takes " +
          (def.max_inputs < 0 ? "at least " + std::to_string(def.min_inputs)
           : def.min_inputs == def.max_inputs
               ? std::to_string(def.min_inputs)
               : std::to_string(def.min_inputs) + " to " + std::to_string(def.max_inputs)) +
          " inputs, got " + std::to_string(count));
    }
    for (TensorId t : inputs) metas.push_back(graph_.tensor(t).meta);
    if (!def.infer) throw InvalidArgumentError("op type '" + type + "' has no shape inference");
    outputs = def.infer(OpContext{type, attrs, metas});
  } catch (const Error& e) {
    RethrowPrefixed(e, label);
  }
  const OpId id = graph_.AddOp(std::move(name), type, std::move(attrs), std::move(inputs), outputs,
                               site_.placement, site_.stage);
  return graph_.op(id).outputs;
}

TensorId GraphBuilder::Add1(const std::string& type, std::vector<TensorId> inputs, Attrs attrs,
                            std::string name) {
  const OpId id = static_cast<OpId>(graph_.ops().size());
  std::vector<TensorId> outputs = Add(type, std::move(inputs), std::move(attrs), std::move(name));
  if (outputs.size() != 1) {
    const OpNode& op = graph_.op(id);
    throw InvalidArgumentError("op '" + op.name + "' (" + type + ") has " +
                               std::to_string(outputs.size()) + " outputs, expected one");
  }
  return outputs[0];
}

}  // namespace twinflow::graph
