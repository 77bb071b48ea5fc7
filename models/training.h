#pragma once
// The training tail every model shares: a scalar mean loss, autograd for the parameters and
// the optimizer's updates.
#include <vector>

#include "engine/graph/graph_builder.h"
#include "models/model.h"

namespace twinflow::models {

// The samples of one micro-batch: the graph is written for one micro-batch, and the Plan runs
// it strategy.micro_batches times per step. InvalidArgumentError when they do not divide, or
// when a micro-batch has fewer samples than a pinned dp has replicas.
int64_t MicroBatch(int64_t batch, const parallel::Strategy& strategy);

// Reduces the per-example `losses` to their mean (a scalar is taken as the mean already),
// divided by the micro-batch count so that the micro-batches' losses add up to the step's;
// appends backward and optimizer ops when options.training (options.optimizer, else
// `default_optimizer`), and packages the model. `layers`
// holds the segments of forward ops (LayerOps) the strategy's recompute asks for: each layer
// (full; InvalidArgumentError when the model gave none) or each attention core (selective;
// none under fused attention). The backward pass recomputes them.
BuiltModel FinishModel(graph::GraphBuilder& builder, graph::TensorId losses,
                       std::vector<graph::TensorId> parameters, std::vector<std::string> feeds,
                       const BuildOptions& options,
                       const std::vector<std::vector<graph::OpId>>& layers = {},
                       const graph::OptimizerConfig& default_optimizer = {});

// Finds the ops of one layer for activation recomputation as a model is built: the ops of
// `builder` with ids in [first, end) (end -1: to the last), source ops (the layer's weights)
// and ops computed from weights alone (their low-precision copies) left out. It scans each op
// once however many layers are asked for (a 100,000-layer model once took minutes in a
// rescan per layer). Lifetime: keeps `builder` by reference; it must outlive the finder.
class LayerOpsFinder {
 public:
  explicit LayerOpsFinder(const graph::GraphBuilder& builder) : builder_(builder) {}
  std::vector<graph::OpId> Ops(graph::OpId first, graph::OpId end = -1);

 private:
  const graph::GraphBuilder& builder_;
  std::vector<bool> from_state_;  // per tensor: computed from weights alone
  std::vector<bool> kept_;        // per op scanned: a recomputable op
};

// A variable initialised from N(0, std^2) (or zeros/ones), seeded per parameter.
graph::TensorId Parameter(graph::GraphBuilder& builder, const std::string& name, Shape shape,
                          const std::string& init, double std, uint64_t seed);

}  // namespace twinflow::models
