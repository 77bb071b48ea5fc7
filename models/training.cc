#include "models/training.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/graph/autograd.h"
#include "engine/graph/optimizer.h"
#include "models/pins.h"

namespace twinflow::models {

graph::TensorId Parameter(graph::GraphBuilder& builder, const std::string& name, Shape shape,
                          const std::string& init, double std, uint64_t seed) {
  return builder.Variable(
      name, std::move(shape), DType::kF32,
      Attrs{{"init", init}, {"std", std}, {"seed", static_cast<int64_t>(seed)}});
}

int64_t MicroBatch(int64_t batch, const parallel::Strategy& strategy) {
  if (strategy.micro_batches < 1 || batch % strategy.micro_batches != 0) {
    throw InvalidArgumentError("batch " + std::to_string(batch) +
                               " is not divisible by mb=" + std::to_string(strategy.micro_batches));
  }
  const int64_t micro_batch = batch / strategy.micro_batches;
  // The data is split over dp (models/pins.h): a replica with no sample has nothing to train.
  if (!strategy.automatic && strategy.dp_source != parallel::DegreeSource::kSearched &&
      micro_batch < strategy.dp) {
    throw InvalidArgumentError("batch " + std::to_string(batch) +
                               " over mb=" + std::to_string(strategy.micro_batches) +
                               " leaves micro-batches of " + std::to_string(micro_batch) +
                               " samples, fewer than dp=" + std::to_string(strategy.dp) +
                               ": every data-parallel replica needs at least one");
  }
  return micro_batch;
}

std::vector<graph::OpId> LayerOpsFinder::Ops(graph::OpId first, graph::OpId end) {
  const graph::LogicalGraph& graph = builder_.graph();
  const auto& all = graph.ops();
  end = end < 0 ? static_cast<graph::OpId>(all.size())
                : std::min<graph::OpId>(end, static_cast<graph::OpId>(all.size()));
  // Ops computed from the weights alone (a weight's low-precision copy) hold no activation:
  // recomputing them would only keep the fp32 weights alive into the backward pass.
  from_state_.resize(graph.tensors().size(), false);
  for (auto id = static_cast<graph::OpId>(kept_.size()); id < end; ++id) {
    const graph::OpNode& op = all[id];
    const graph::OpRole role = builder_.registry().Find(op.type).role;
    bool state = role == graph::OpRole::kVariable;
    if (role == graph::OpRole::kCompute && !op.inputs.empty()) {
      state = std::all_of(op.inputs.begin(), op.inputs.end(),
                          [&](graph::TensorId t) { return static_cast<bool>(from_state_[t]); });
    }
    for (graph::TensorId t : op.outputs) from_state_[t] = state;
    kept_.push_back(!builder_.registry().Find(op.type).is_source() && !state);
  }
  std::vector<graph::OpId> ops;
  for (graph::OpId id = std::max<graph::OpId>(first, 0); id < end; ++id) {
    if (kept_[id]) ops.push_back(id);
  }
  return ops;
}

BuiltModel FinishModel(graph::GraphBuilder& builder, graph::TensorId losses,
                       std::vector<graph::TensorId> parameters, std::vector<std::string> feeds,
                       const BuildOptions& options,
                       const std::vector<std::vector<graph::OpId>>& layers,
                       const graph::OptimizerConfig& default_optimizer) {
  if (options.strategy.recompute == parallel::Recompute::kFull && options.training &&
      layers.empty()) {
    throw InvalidArgumentError("recompute=full needs a model with layers (gpt, mlp)");
  }
  builder.SetAutocast(std::nullopt);  // the loss's mean, the backward pass and the updates
  std::vector<int64_t> axes;
  for (int k = 0; k < builder.meta(losses).shape.rank(); ++k) axes.push_back(k);
  const int64_t micro_batches = options.strategy.micro_batches;
  // Per-example losses are averaged; a scalar (a front end's own reduction) is the mean already.
  graph::TensorId loss = axes.empty() ? losses
                                      : builder.Add1("reduce_mean", {losses},
                                                     Attrs{{"axes", axes}, {"keepdims", false}},
                                                     micro_batches > 1 ? "loss/mean" : "loss");
  if (micro_batches > 1) {
    // Each micro-batch's loss is its share of the step's mean: summed over the micro-batches
    // (gradients by ACC, the fetched values by the host) they give the whole batch's.
    loss = builder.Add1("scalar_mul", {loss},
                        Attrs{{"value", 1.0 / static_cast<double>(micro_batches)}}, "loss");
  }
  PinBatchSplit(builder, options.strategy);
  BuiltModel model;
  if (options.training) {
    model.optimizer = options.optimizer.value_or(default_optimizer);
    // fp16: dynamic loss scaling. The backward pass starts from loss * scale, so that small
    // gradients stay above fp16's underflow; the updates divide it out again (grad_factor).
    std::optional<graph::TensorId> loss_scale;
    graph::TensorId backward_from = loss;
    if (options.strategy.precision == DType::kF16) {
      loss_scale = graph::AddLossScale(builder, *model.optimizer);
      backward_from = builder.Add1("mul", {loss, *loss_scale}, {}, "loss/scaled");
    }
    const auto gradients =
        graph::AddBackward(builder, backward_from, parameters,
                           options.strategy.recompute != parallel::Recompute::kNone
                               ? layers
                               : std::vector<std::vector<graph::OpId>>{});
    // The backward pass too: activation gradients keep the batch split over dp, so a weight's
    // gradient comes out partial over dp and is all-reduced, as data parallelism does.
    PinBatchSplit(builder, options.strategy, /*bind_consumers=*/true);
    PinWideGradientSums(builder, options.strategy);
    graph::AddOptimizer(builder, *model.optimizer, gradients, loss_scale);
    PinShardedOptimizerState(builder, options.strategy);
  }
  model.graph = builder.graph();
  model.loss = loss;
  model.parameters = std::move(parameters);
  model.feeds = std::move(feeds);
  model.strategy = options.strategy;
  model.devices = options.devices;
  return model;
}

}  // namespace twinflow::models
