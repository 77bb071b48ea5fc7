#pragma once
// GraphBuilder: the C++ API for writing a LogicalGraph, and what gradient functions use to
// append backward ops. Each added op's outputs are inferred by its OpDef, so a mistake is
// reported where it is made, naming the op.
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/graph/logical_graph.h"
#include "engine/graph/op_registry.h"

namespace twinflow::graph {

class GraphBuilder {
 public:
  GraphBuilder(const OpRegistry& registry, sbp::Placement placement);

  // Where ops added from now on go: a placement and a pipeline stage.
  struct Site {
    sbp::Placement placement;
    int32_t stage = 0;
  };
  // Ops added from now on go to `placement`, in the current stage.
  void SetPlacement(sbp::Placement placement) { site_.placement = std::move(placement); }
  // Ops added from now on belong to pipeline stage `stage`, on `placement`.
  void SetStage(int32_t stage, sbp::Placement placement) {
    site_ = Site{std::move(placement), stage};
  }
  // Ops added from now on go where `op` is (gradients and updates join their op's stage).
  void PlaceLike(const OpNode& op) { site_ = Site{op.placement, op.stage}; }
  void SetSite(Site site) { site_ = std::move(site); }
  const Site& site() const { return site_; }
  const sbp::Placement& placement() const { return site_.placement; }
  int32_t stage() const { return site_.stage; }

  // A data input fed from outside at every step.
  TensorId Input(const std::string& name, Shape shape, DType dtype = DType::kF32);
  // Model state. `init` attrs: "init" = "normal" | "uniform" | "zeros" | "ones", "std",
  // "scale", and "seed"; values depend only on (seed, logical index), so every layout of the
  // variable starts from the same logical tensor.
  TensorId Variable(const std::string& name, Shape shape, DType dtype, Attrs init);

  // Adds an op of `type`; `name` defaults to "<type>_<id>". Throws the OpDef's error with the
  // op's name prepended.
  std::vector<TensorId> Add(const std::string& type, std::vector<TensorId> inputs, Attrs attrs = {},
                            std::string name = "");
  TensorId Add1(const std::string& type, std::vector<TensorId> inputs, Attrs attrs = {},
                std::string name = "");

  // Mixed precision as the graph is written (PyTorch's autocast; engine/graph/autocast.cc).
  // While set, an op added with a float input in `dtype`, or one read from a variable (the
  // fp32 master weights), gets its other f32 inputs cast to `dtype` first: one cast per tensor
  // and stage, keeping the tensor's pin. Off (nullopt) by default. Write the backward pass with
  // it off: gradients take their forward tensors' types, and a narrowing cast's gradient
  // widens back to f32.
  void SetAutocast(std::optional<DType> dtype) { autocast_ = dtype; }
  // `tensor` cast to `dtype`, laid out as the tensor is pinned (the same pin on the cast).
  TensorId CastKeepingPin(TensorId tensor, DType dtype, std::string name = "");

  void Pin(TensorId tensor, sbp::NdSbp nd_sbp, std::vector<int> free_axes = {},
           bool binds_consumers = false) {
    graph_.Pin(tensor, std::move(nd_sbp), std::move(free_axes), binds_consumers);
  }
  void Pin(TensorId tensor, const TensorPin& pin) { graph_.Pin(tensor, pin); }
  const TensorMeta& meta(TensorId tensor) const { return graph_.tensor(tensor).meta; }
  const OpRegistry& registry() const { return registry_; }
  LogicalGraph& graph() { return graph_; }
  const LogicalGraph& graph() const { return graph_; }

 private:
  // The inputs of an op of `type` as autocast gives them to it (autocast.cc).
  std::vector<TensorId> Autocast(const std::string& type, std::vector<TensorId> inputs);
  TensorId AutocastTo(TensorId tensor, DType dtype);

  const OpRegistry& registry_;
  Site site_;
  LogicalGraph graph_;
  std::optional<DType> autocast_;
  std::map<std::tuple<TensorId, DType, int32_t>, TensorId> autocast_casts_;  // (tensor, to, stage)
};

}  // namespace twinflow::graph
