#include "models/model.h"

#include "engine/core/error.h"

namespace twinflow::models {

graph::OptimizerConfig DefaultOptimizer(const std::string& model) {
  return graph::ParseOptimizer(model == "gpt" || model == "llama" ? "adamw" : "sgd");
}

std::string OptimizerLabel(const BuiltModel& model) {
  return model.optimizer ? graph::OptimizerText(*model.optimizer) : "none (inference)";
}

std::map<std::string, Tensor> SyntheticBatch(const BuiltModel& model, int64_t step, uint64_t seed) {
  Rng rng(seed * 1000003 + static_cast<uint64_t>(step));
  std::map<std::string, Tensor> batch;
  for (const std::string& name : model.feeds) {
    graph::TensorMeta meta =
        model.graph.tensor(model.graph.op(*model.graph.FindOp(name)).outputs[0]).meta;
    // The graph holds one micro-batch; a step's feed holds them all, one after another.
    if (meta.shape.rank() > 0) meta.shape[0] *= model.strategy.micro_batches;
    const auto bound = model.index_bounds.find(name);
    if (bound == model.index_bounds.end()) {
      batch[name] = Tensor::Random(meta.shape, meta.dtype, rng);
      continue;
    }
    Tensor t(meta.shape, meta.dtype);
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.SetDouble(i, static_cast<double>(rng.UniformInt(0, bound->second - 1)));
    }
    batch[name] = std::move(t);
  }
  return batch;
}

int64_t StageOf(int64_t layer, int64_t layers, int64_t stages) { return layer * stages / layers; }

}  // namespace twinflow::models
