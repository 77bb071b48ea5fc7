// Mixed precision as the graph is written: GraphBuilder's autocast (graph_builder.h).
//
// The rule is one line: an op that touches the low type, or reads a weight, computes in the
// low type. Weights stay fp32 variables (the master copy the optimizer updates); each is cast
// to the low type once per stage where the forward pass first reads it, so the GEMMs, norms and
// activations all see the low type, and the activations between them are stored in it. Ops on
// fp32 values that touch neither (the loss's mean, a scale) stay fp32; so does cross entropy,
// which casts its logits up itself (ops::SparseSoftmaxCrossEntropy), as Megatron computes it.
#include "engine/graph/graph_builder.h"

namespace twinflow::graph {
namespace {

bool ReadsVariable(const LogicalGraph& graph, const OpRegistry& registry, TensorId tensor) {
  const OpId producer = graph.tensor(tensor).producer;
  return producer >= 0 && registry.Find(graph.op(producer).type).role == OpRole::kVariable;
}

}  // namespace

std::vector<TensorId> GraphBuilder::Autocast(const std::string& type,
                                             std::vector<TensorId> inputs) {
  const DType low = *autocast_;
  if (type == "cast" || !registry_.Has(type) || registry_.Find(type).role != OpRole::kCompute) {
    return inputs;
  }
  bool computes_low = false;
  for (TensorId t : inputs) {
    const DType dtype = meta(t).dtype;
    computes_low = computes_low || dtype == low ||
                   (dtype == DType::kF32 && ReadsVariable(graph_, registry_, t));
  }
  if (!computes_low) return inputs;
  for (TensorId& t : inputs) {
    if (meta(t).dtype == DType::kF32) t = AutocastTo(t, low);
  }
  return inputs;
}

TensorId GraphBuilder::AutocastTo(TensorId tensor, DType dtype) {
  const auto key = std::make_tuple(tensor, dtype, site_.stage);
  if (const auto it = autocast_casts_.find(key); it != autocast_casts_.end()) return it->second;
  const std::string name = graph_.tensor(tensor).name + "/" + DTypeName(dtype);
  const TensorId cast = CastKeepingPin(tensor, dtype, graph_.FindOp(name) ? "" : name);
  autocast_casts_.emplace(key, cast);
  return cast;
}

TensorId GraphBuilder::CastKeepingPin(TensorId tensor, DType dtype, std::string name) {
  std::optional<TensorPin> pin = graph_.tensor(tensor).pin;  // Add1 may move the node
  if (pin && graph_.tensor(tensor).producer >= 0 &&
      registry_.Find(graph_.op(graph_.tensor(tensor).producer).type).role == OpRole::kVariable) {
    // A variable's pin binds its readers implicitly (compiler/sbp_search.cc ReadPin); its low
    // copy must bind them explicitly, or a tensor-parallel GEMM reads the copy whole and the
    // search gathers the weight (as FSDP would) instead of splitting the GEMM.
    pin->binds_consumers = true;
    pin->update_reads_shards = false;
  }
  const TensorId cast =
      Add1("cast", {tensor}, Attrs{{"dtype", std::string(DTypeName(dtype))}}, std::move(name));
  if (pin) Pin(cast, *pin);
  return cast;
}

}  // namespace twinflow::graph
