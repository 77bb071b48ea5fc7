#pragma once
// The training tail every model shares: a scalar mean loss, autograd for the parameters and
// the optimizer's updates.
#include <vector>

#include "engine/graph/graph_builder.h"
#include "models/model.h"

namespace twinflow::models {

// Reduces the per-example `losses` to their mean, appends backward and optimizer ops when
// options.training, and packages the model.
BuiltModel FinishModel(graph::GraphBuilder& builder, graph::TensorId losses,
                       std::vector<graph::TensorId> parameters, std::vector<std::string> feeds,
                       const BuildOptions& options);

// A variable initialised from N(0, std^2) (or zeros/ones), seeded per parameter.
graph::TensorId Parameter(graph::GraphBuilder& builder, const std::string& name, Shape shape,
                          const std::string& init, double std, uint64_t seed);

}  // namespace twinflow::models
