// The step's gradient statistics and what the optimizer does with them: clipping by the global
// norm and dynamic loss scaling (graph/optimizer.h, AddOptimizer).
//   sum_squares(grad) -> f32[]                 the sum of the squares of a gradient, summed
//                                              over the step's micro-batches (role
//                                              kGradientStatistic: read after the ACC)
//   grad_factor(norm_sq[, scale]) -> f32[]     attr max_norm (0: no clipping). What every
//                                              update multiplies its gradient by: 1/scale, times
//                                              min(1, max_norm / (norm + 1e-6)) with norm the
//                                              unscaled global norm, as PyTorch's
//                                              clip_grad_norm_. NaN when norm_sq is not finite:
//                                              the updates then skip the step.
//   loss_scale_update(scale, good, norm_sq) -> scale', good'
//                                              attrs window, min_scale. Overflow (norm_sq not
//                                              finite): scale halves (not below min_scale), good
//                                              restarts at 0; else good + 1, and after `window`
//                                              good steps in a row the scale doubles.
//   lr_schedule(step, base_lr) -> f32[]        attrs decay (constant, linear, cosine), warmup,
//                                              decay_steps, min_lr: the step's learning rate
//                                              (engine/core/lr_schedule.h), which every update
//                                              then reads as an input (attr lr_input).
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/lr_decay.h"
#include "engine/ops/op_families.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

TensorMeta Scalar() { return TensorMeta{Shape{}, DType::kF32}; }

// Scalars in, scalars out: only whole values.
std::vector<SbpSignature> AllBroadcast(const OpContext& ctx, int outputs) {
  return {Sig(std::vector<sbp::Sbp>(ctx.inputs.size(), B()), std::vector<sbp::Sbp>(outputs, B()))};
}

OpDef SumSquares() {
  OpDef def;
  def.type = "sum_squares";
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 1);
    CheckWideFloat(ctx, 0, "grad");
    return std::vector<TensorMeta>{Scalar()};
  };
  // A split gradient gives each part's sum, to be added: partial.
  def.signatures = [](const OpContext& ctx, int64_t) {
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < ctx.inputs[0].shape.rank(); ++k) sigs.push_back(Sig({S(k)}, {P()}));
    sigs.push_back(Sig({B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) { return InputScaledCost(ctx, {Scalar()}, 2); };
  def.role = graph::OpRole::kGradientStatistic;
  return def;
}

OpDef GradFactor() {
  OpDef def;
  def.type = "grad_factor";
  def.min_inputs = 1;
  def.max_inputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckF32Scalar(ctx, 0, "norm_sq");
    if (ctx.inputs.size() > 1) CheckF32Scalar(ctx, 1, "scale");
    if (!(ctx.attrs.GetDouble("max_norm", 0) >= 0)) {
      ThrowInvalid(ctx, "attribute 'max_norm' must be >= 0");
    }
    return std::vector<TensorMeta>{Scalar()};
  };
  def.signatures = [](const OpContext& ctx, int64_t) { return AllBroadcast(ctx, 1); };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {Scalar()}, 4); };
  return def;
}

OpDef LossScaleUpdate() {
  OpDef def;
  def.type = "loss_scale_update";
  def.min_inputs = 3;
  def.max_inputs = 3;
  def.num_outputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckF32Scalar(ctx, 0, "scale");
    CheckF32Scalar(ctx, 1, "good steps");
    CheckF32Scalar(ctx, 2, "norm_sq");
    if (ctx.attrs.GetInt("window", 1000) < 1) ThrowInvalid(ctx, "attribute 'window' must be >= 1");
    if (!(ctx.attrs.GetDouble("min_scale", 1) > 0)) {
      ThrowInvalid(ctx, "attribute 'min_scale' must be > 0");
    }
    return std::vector<TensorMeta>{ctx.inputs[0], ctx.inputs[1]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) { return AllBroadcast(ctx, 2); };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {Scalar(), Scalar()}, 4); };
  // It advances the scaler's state once a step, as step_increment advances a step counter; it
  // applies no gradient (an optimizer update's input 1, which `sim --replica` all-reduces).
  def.role = graph::OpRole::kStepIncrement;
  return def;
}

OpDef LrSchedule() {
  OpDef def;
  def.type = "lr_schedule";
  def.min_inputs = 2;
  def.max_inputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckF32Scalar(ctx, 0, "step");
    CheckF32Scalar(ctx, 1, "base_lr");
    const LrDecay decay = LrDecayAttr(ctx.attrs);
    const double warmup = ctx.attrs.GetDouble("warmup", 0);
    const double decay_steps = ctx.attrs.GetDouble("decay_steps", 0);
    if (!(warmup >= 0) || !(ctx.attrs.GetDouble("min_lr", 0) >= 0)) {
      ThrowInvalid(ctx, "attributes 'warmup' and 'min_lr' must be >= 0");
    }
    if (decay != LrDecay::kConstant && !(decay_steps > warmup)) {
      ThrowInvalid(ctx, "attribute 'decay_steps' must exceed 'warmup' for a decay");
    }
    return std::vector<TensorMeta>{Scalar()};
  };
  def.signatures = [](const OpContext& ctx, int64_t) { return AllBroadcast(ctx, 1); };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {Scalar()}, 8); };
  return def;
}

}  // namespace

void RegisterGradControlOps(graph::OpRegistry& registry) {
  registry.Register(SumSquares());
  registry.Register(GradFactor());
  registry.Register(LossScaleUpdate());
  registry.Register(LrSchedule());
}

}  // namespace twinflow::ops
