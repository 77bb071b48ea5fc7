// Optimizer update ops. Each is elementwise over its parameter, so any split applied alike to
// the parameter, its gradient and its state is valid; the Adam step counter is a whole scalar.
//   sgd_update(param, grad) -> param'                      attrs lr, weight_decay
//   sgd_momentum_update(param, grad, buf) -> param', buf'  attrs lr, momentum, weight_decay
//   adam_update(param, grad, m, v, step) -> param', m', v' attrs lr, beta1, beta2, epsilon,
//                                                          weight_decay, decoupled
//   step_increment(step) -> step + 1
// (A separate momentum op type because an OpDef has a fixed number of outputs.)
// With attr lr_input an update reads its learning rate (f32[], lr_schedule in
// grad_control_ops.cc) as the input after the tensors instead of attr lr (kept as the base).
// Each takes an optional last input, `factor` (f32[], grad_factor in grad_control_ops.cc): the
// gradient is multiplied by it, and where it is not finite the update is skipped (outputs equal
// the inputs, the step counter stays), as a loss scaler skips a step that overflowed.
#include "engine/ops/update_ops.h"

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

void CheckNonNegative(const OpContext& ctx, const std::string& attr, double fallback) {
  const double value = ctx.attrs.GetDouble(attr, fallback);
  if (!(value >= 0)) ThrowInvalid(ctx, "attribute '" + attr + "' must be >= 0");
}

// Checks that the first `tensors` inputs all match the parameter; returns the outputs' metas.
std::vector<TensorMeta> InferElementwiseUpdate(const OpContext& ctx, int tensors, int outputs) {
  CheckWideFloat(ctx, 0);
  for (int i = 1; i < tensors; ++i) {
    if (!(ctx.inputs[i] == ctx.inputs[0])) {
      ThrowShape(ctx, "input " + std::to_string(i) + " " + ctx.inputs[i].ToString() +
                          " does not match the parameter " + ctx.inputs[0].ToString());
    }
  }
  ctx.attrs.GetDouble("lr");
  CheckNonNegative(ctx, "weight_decay", 0);
  return std::vector<TensorMeta>(outputs, ctx.inputs[0]);
}

// `count` inputs, then the learning rate with attr lr_input, then optionally the gradient
// factor.
void CheckInputsAndFactor(const OpContext& ctx, int count) {
  const int lr = ctx.attrs.GetBool("lr_input", false) ? 1 : 0;
  if (ctx.inputs.size() == static_cast<size_t>(count + lr + 1)) {
    CheckF32Scalar(ctx, count + lr, "the gradient factor");
  } else {
    CheckInputCount(ctx, count + lr);
  }
  if (lr) CheckF32Scalar(ctx, count, "the learning rate");
}

std::vector<TensorMeta> InferSgd(const OpContext& ctx) {
  CheckInputsAndFactor(ctx, 2);
  return InferElementwiseUpdate(ctx, 2, 1);
}

std::vector<TensorMeta> InferSgdMomentum(const OpContext& ctx) {
  CheckInputsAndFactor(ctx, 3);
  CheckNonNegative(ctx, "momentum", 0);
  return InferElementwiseUpdate(ctx, 3, 2);
}

void CheckStep(const OpContext& ctx, int index) { CheckF32Scalar(ctx, index, "the step counter"); }

std::vector<TensorMeta> InferAdam(const OpContext& ctx) {
  CheckInputsAndFactor(ctx, 5);
  CheckStep(ctx, 4);
  for (const char* beta : {"beta1", "beta2"}) {
    const double value = ctx.attrs.GetDouble(beta, 0.9);
    if (!(value >= 0 && value < 1))
      ThrowInvalid(ctx, std::string("attribute '") + beta + "' must be in [0, 1)");
  }
  CheckNonNegative(ctx, "epsilon", 1e-8);
  ctx.attrs.GetBool("decoupled", false);
  return InferElementwiseUpdate(ctx, 4, 3);
}

std::vector<TensorMeta> InferStepIncrement(const OpContext& ctx) {
  CheckInputsAndFactor(ctx, 1);
  CheckStep(ctx, 0);
  return {ctx.inputs[0]};
}

// Every split of the parameter (applied to all `tensors` inputs and every output) and all B;
// inputs past `tensors` (the step counter) stay B.
std::vector<SbpSignature> UpdateSignatures(const OpContext& ctx, int tensors, int outputs) {
  const int extra = static_cast<int>(ctx.inputs.size()) - tensors;
  std::vector<SbpSignature> sigs;
  for (int k = 0; k <= ctx.inputs[0].shape.rank(); ++k) {
    const sbp::Sbp s = k < ctx.inputs[0].shape.rank() ? S(k) : B();
    std::vector<sbp::Sbp> ins(tensors, s);
    ins.insert(ins.end(), extra, B());
    sigs.push_back(SbpSignature{ins, std::vector<sbp::Sbp>(outputs, s)});
  }
  return sigs;
}

OpDef UpdateDef(const std::string& type, int inputs, int tensors, int outputs,
                std::vector<TensorMeta> (*infer)(const OpContext&), double flops,
                graph::OpRole role) {
  OpDef def{
      type,
      inputs,
      inputs + 2,  // the learning rate, the gradient factor
      outputs,
      infer,
      [tensors, outputs](const OpContext& ctx, int64_t) {
        return UpdateSignatures(ctx, tensors, outputs);
      },
      [infer, flops](const OpContext& ctx) { return ElementwiseCost(ctx, infer(ctx), flops); },
      nullptr};
  def.role = role;
  return def;
}

}  // namespace

void RegisterUpdateOps(graph::OpRegistry& registry) {
  using graph::OpRole;
  registry.Register(UpdateDef("sgd_update", 2, 2, 1, InferSgd, 3, OpRole::kOptimizerUpdate));
  registry.Register(
      UpdateDef("sgd_momentum_update", 3, 3, 2, InferSgdMomentum, 3, OpRole::kOptimizerUpdate));
  registry.Register(UpdateDef("adam_update", 5, 4, 3, InferAdam, 8, OpRole::kOptimizerUpdate));
  registry.Register(
      UpdateDef("step_increment", 1, 1, 1, InferStepIncrement, 1, OpRole::kStepIncrement));
}

}  // namespace twinflow::ops
