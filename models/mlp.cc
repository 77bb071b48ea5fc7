// The MLP: dense layers with ReLU between them and a softmax cross-entropy loss. Under tensor
// parallelism layers pair up Megatron-style (column-parallel, then row-parallel); a trailing
// column-parallel layer leaves the logits split by class, and the loss is then built for
// split classes.
#include <cmath>

#include "engine/core/error.h"
#include "engine/ops/softmax_ops.h"
#include "models/model.h"
#include "models/model_flops.h"
#include "models/pins.h"
#include "models/training.h"

namespace twinflow::models {

BuiltModel BuildMlp(const graph::OpRegistry& registry, const MlpConfig& config,
                    const BuildOptions& given) {
  BuildOptions options = given;  // the strategy with its inferred degree
  options.strategy.Resolve(options.devices);
  const parallel::Strategy& strategy = options.strategy;
  const int64_t layers = static_cast<int64_t>(config.widths.size()) - 1;
  if (layers < 1) throw InvalidArgumentError("mlp needs at least an input and an output width");
  for (int64_t w : config.widths) {
    if (w < 1) throw InvalidArgumentError("mlp widths must be positive");
  }
  if (config.batch < 1) throw InvalidArgumentError("mlp batch must be positive");
  if (strategy.stages() > layers) {
    throw InvalidArgumentError(strategy.StagesText() + " exceeds the mlp's " +
                               std::to_string(layers) + " layers");
  }
  graph::GraphBuilder builder(registry,
                              strategy.StagePlacement(0, options.devices, options.device));
  builder.SetAutocast(strategy.Autocast());
  const int64_t batch = MicroBatch(config.batch, strategy);
  const graph::TensorId x = builder.Input("x", Shape{batch, config.widths[0]});
  const graph::TensorId labels = builder.Input("labels", Shape{batch}, DType::kI32);
  PinData(builder, strategy, x);
  PinData(builder, strategy, labels);

  std::vector<graph::TensorId> parameters;
  std::vector<std::vector<graph::OpId>> layer_ops;
  LayerOpsFinder finder(builder);
  graph::TensorId h = x;
  for (int64_t i = 0; i < layers; ++i) {
    const auto first = static_cast<graph::OpId>(builder.graph().ops().size());
    const int64_t stage = StageOf(i, layers, strategy.stages());
    builder.SetStage(static_cast<int32_t>(stage),
                     strategy.StagePlacement(stage, options.devices, options.device));
    const int64_t in = config.widths[i], out = config.widths[i + 1];
    const std::string name = "layer" + std::to_string(i);
    const graph::TensorId w =
        Parameter(builder, name + "/weight", Shape{in, out}, "normal",
                  std::sqrt(2.0 / static_cast<double>(in)), options.seed * 1000 + 2 * i);
    const graph::TensorId b =
        Parameter(builder, name + "/bias", Shape{out}, "zeros", 0, options.seed * 1000 + 2 * i + 1);
    const bool column = i % 2 == 0;
    PinWeight(builder, strategy, w, column ? WeightRole::kColumn : WeightRole::kRow);
    PinWeight(builder, strategy, b, column ? WeightRole::kColumnBias : WeightRole::kReplicated);
    parameters.push_back(w);
    parameters.push_back(b);
    h = builder.Add1("bias_add", {builder.Add1("matmul", {h, w}, {}, name + "/matmul"), b}, {},
                     name + "/bias_add");
    if (!column) PinActivation(builder, strategy, h);  // a column/row pair ends whole
    if (i + 1 < layers) h = builder.Add1("relu", {h}, {}, name + "/relu");
    layer_ops.push_back(finder.Ops(first));
  }
  const bool classes_split = !strategy.automatic && strategy.tp > 1 && (layers - 1) % 2 == 0;
  if (classes_split) PinClassSplitLogits(builder, strategy, h);
  const graph::TensorId losses = ops::SparseSoftmaxCrossEntropy(builder, h, labels, classes_split);
  if (options.strategy.recompute == parallel::Recompute::kSelective) {
    throw InvalidArgumentError("recompute=selective recomputes attention: the mlp has none");
  }
  BuiltModel model = FinishModel(builder, losses, parameters, {"x", "labels"}, options, layer_ops);
  model.index_bounds["labels"] = config.widths.back();
  if (options.training) model.model_flops_per_step = MlpModelFlops(config);
  return model;
}

}  // namespace twinflow::models
