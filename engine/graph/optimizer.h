#pragma once
// Optimizers as ops: an update op computes a parameter's next value (and its optimizer
// state's) from the gradient; an `assign` op then names the variable that takes it. Optimizer
// state (momentum, Adam moments, the step count) are variables initialised to zero, so
// checkpoints and layouts treat them like parameters.
#include <map>
#include <string>

#include "engine/graph/graph_builder.h"

namespace twinflow::graph {

struct OptimizerConfig {
  enum class Kind { kSgd, kAdam, kAdamW };
  Kind kind = Kind::kSgd;
  double learning_rate = 0.01;
  double momentum = 0.0;      // SGD
  double beta1 = 0.9;         // Adam
  double beta2 = 0.999;       // Adam
  double epsilon = 1e-8;      // Adam
  double weight_decay = 0.0;  // SGD and Adam: L2 added to the gradient; AdamW: decoupled
};

// Parses "sgd", "sgd:lr=0.1,momentum=0.9", "adam:lr=1e-3", "adamw:lr=1e-3,weight_decay=0.01".
// Throws InvalidArgumentError naming the bad field.
OptimizerConfig ParseOptimizer(const std::string& text);

// The text ParseOptimizer reads back into `config`, every field given, e.g.
// "adamw:lr=0.001,beta1=0.9,beta2=0.999,epsilon=1e-08,weight_decay=0.01": what the commands
// print as the optimizer they used.
std::string OptimizerText(const OptimizerConfig& config);

// Appends update and assign ops for every (variable, gradient) pair, in variable id order.
void AddOptimizer(GraphBuilder& builder, const OptimizerConfig& config,
                  const std::map<TensorId, TensorId>& gradients);

}  // namespace twinflow::graph
