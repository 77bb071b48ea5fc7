#pragma once
// Optimizers as ops: an update op computes a parameter's next value (and its optimizer
// state's) from the gradient; an `assign` op then names the variable that takes it. Optimizer
// state (momentum, Adam moments, the step count) are variables initialised to zero, so
// checkpoints and layouts treat them like parameters.
#include <map>
#include <optional>
#include <string>

#include "engine/core/lr_schedule.h"
#include "engine/graph/graph_builder.h"

namespace twinflow::graph {

// A learning-rate schedule (engine/core/lr_schedule.h): Megatron's --lr-warmup-iters,
// --lr-decay-style, --lr-decay-iters and --min-lr.
struct LrSchedule {
  LrDecay decay = LrDecay::kConstant;
  int64_t warmup = 0;
  int64_t decay_steps = 0;  // the step the decay ends at (counted from 0, warmup included)
  double min_lr = 0;
};

struct OptimizerConfig {
  enum class Kind { kSgd, kAdam, kAdamW };
  Kind kind = Kind::kSgd;
  double learning_rate = 0.01;
  double momentum = 0.0;      // SGD
  double beta1 = 0.9;         // Adam
  double beta2 = 0.999;       // Adam
  double epsilon = 1e-8;      // Adam
  double weight_decay = 0.0;  // SGD and Adam: L2 added to the gradient; AdamW: decoupled
  // Clipping by the global norm of every gradient (all shards, all stages), as PyTorch's
  // clip_grad_norm_ and Megatron's --clip-grad: 0 for none.
  double clip_grad = 0.0;
  // Dynamic loss scaling (used when the model computes in fp16): the initial scale, and the
  // good steps after which it doubles. An overflow halves it and skips the step.
  double loss_scale = 65536.0;
  int64_t loss_scale_window = 1000;
  // Set: the learning rate is a graph tensor, lr_schedule of a step counter and of the
  // variable "learning_rate" (initialised to learning_rate, which a front end may overwrite
  // between steps); every update reads it as an input. Unset: the constant attr lr.
  std::optional<LrSchedule> schedule;
};

// Parses "sgd", "sgd:lr=0.1,momentum=0.9", "adam:lr=1e-3", "adamw:lr=1e-3,weight_decay=0.01";
// every kind also takes clip_grad, loss_scale and loss_scale_window, and the schedule's
// schedule=constant|linear|cosine, warmup, decay_steps and min_lr (any of them sets a schedule;
// a decay needs decay_steps beyond warmup). Throws InvalidArgumentError naming the bad field.
OptimizerConfig ParseOptimizer(const std::string& text);

// The text ParseOptimizer reads back into `config`, every field given, e.g.
// "adamw:lr=0.001,beta1=0.9,beta2=0.999,epsilon=1e-08,weight_decay=0.01": what the commands
// print as the optimizer they used.
std::string OptimizerText(const OptimizerConfig& config);

// Appends update and assign ops for every (variable, gradient) pair, in variable id order;
// with config.schedule first the learning rate (variables "learning_rate" and "lr_step").
// `loss_scale`: the variable (f32[]) the loss was multiplied by before the backward pass
// (dynamic loss scaling), or nullopt. With it or config.clip_grad, every update also reads one
// gradient factor of the step (grad_factor: unscale, clip, or skip the step on an overflow),
// from the sum of squares of every gradient; with it, loss_scale_update then adapts the scale.
void AddOptimizer(GraphBuilder& builder, const OptimizerConfig& config,
                  const std::map<TensorId, TensorId>& gradients,
                  std::optional<TensorId> loss_scale = std::nullopt);
// The loss-scale variable for `config` at the builder's site: f32[] "loss_scale", initialised
// to config.loss_scale.
TensorId AddLossScale(GraphBuilder& builder, const OptimizerConfig& config);

}  // namespace twinflow::graph
