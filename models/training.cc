#include "models/training.h"

#include "engine/graph/autograd.h"

namespace twinflow::models {

graph::TensorId Parameter(graph::GraphBuilder& builder, const std::string& name, Shape shape,
                          const std::string& init, double std, uint64_t seed) {
  return builder.Variable(name, std::move(shape), DType::kF32,
                          Attrs{{"init", init}, {"std", std},
                                {"seed", static_cast<int64_t>(seed)}});
}

BuiltModel FinishModel(graph::GraphBuilder& builder, graph::TensorId losses,
                       std::vector<graph::TensorId> parameters, std::vector<std::string> feeds,
                       const BuildOptions& options) {
  std::vector<int64_t> axes;
  for (int k = 0; k < builder.meta(losses).shape.rank(); ++k) axes.push_back(k);
  const graph::TensorId loss = builder.Add1(
      "reduce_mean", {losses}, Attrs{{"axes", axes}, {"keepdims", false}}, "loss");
  if (options.training) {
    const auto gradients = graph::AddBackward(builder, loss, parameters);
    graph::AddOptimizer(builder, options.optimizer, gradients);
  }
  BuiltModel model;
  model.graph = builder.graph();
  model.loss = loss;
  model.parameters = std::move(parameters);
  model.feeds = std::move(feeds);
  model.strategy = options.strategy;
  return model;
}

}  // namespace twinflow::models
