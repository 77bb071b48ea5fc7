// The activation family: relu, gelu (tanh approximation, see below), tanh, exp, silu, and
// the gradient helpers relu_grad(dy, y), gelu_grad(dy, x), tanh_grad(dy, y), silu_grad(dy, x).
//
// silu(x) = x sigmoid(x) (swish), the gate of Llama's SwiGLU MLP.
//
// gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the approximation GPT-2 and
// Megatron use, not the exact erf form.
//
// None is linear, so P(sum) never passes; relu, tanh and exp are monotone, so they commute with
// max and min and P(max)/P(min) pass. The *_grad helpers are linear in dy: P(sum) in dy with the
// forward tensor B gives P(sum).
#include "engine/core/error.h"
#include "engine/ops/op_families.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

// Rough flops per element, for the cost model.
double FlopsPerElement(const std::string& type) {
  if (type == "gelu" || type == "gelu_grad") return 16;
  if (type == "silu" || type == "silu_grad") return 10;
  if (type == "tanh" || type == "exp") return 8;
  if (type == "tanh_grad") return 3;
  return 1;
}

std::vector<TensorMeta> InferUnary(const OpContext& ctx) {
  CheckInputCount(ctx, 1);
  CheckFloat(ctx, 0);
  return {ctx.inputs[0]};
}

OpDef Activation(const std::string& type, bool monotone,
                 std::function<TensorId(GraphBuilder&, const OpNode&, TensorId)> grad) {
  OpDef def;
  def.type = type;
  def.kernel_class = graph::KernelClass::kActivation;
  def.infer = InferUnary;
  def.signatures = [monotone](const OpContext& ctx, int64_t) {
    const Shape& shape = ctx.inputs[0].shape;
    std::vector<SbpSignature> sigs = BroadcastSplitSignatures({shape}, shape);
    if (monotone) {
      for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) AddSignature(sigs, {{P(op)}, {P(op)}});
    }
    return sigs;
  };
  def.cost = [type](const OpContext& ctx) {
    return ElementwiseCost(ctx, {ctx.inputs[0]}, FlopsPerElement(type));
  };
  def.gradient = [grad](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt};
    return {grad(b, op, *dy[0])};
  };
  return def;
}

std::vector<TensorMeta> InferGrad(const OpContext& ctx) {
  CheckInputCount(ctx, 2);
  CheckSameDType(ctx);
  CheckFloat(ctx, 0);
  if (ctx.inputs[0].shape != ctx.inputs[1].shape) {
    ThrowShape(ctx, "dy " + ctx.inputs[0].ToString() + " and the forward tensor " +
                        ctx.inputs[1].ToString() + " differ in shape");
  }
  return {ctx.inputs[0]};
}

OpDef GradHelper(const std::string& type, graph::GradientFn gradient) {
  OpDef def;
  def.type = type;
  def.kernel_class = graph::KernelClass::kActivation;
  def.min_inputs = 2;
  def.max_inputs = 2;
  def.infer = InferGrad;
  def.signatures = [](const OpContext& ctx, int64_t) {
    const Shape& shape = ctx.inputs[0].shape;
    std::vector<SbpSignature> sigs = BroadcastSplitSignatures({shape, shape}, shape);
    AddSignature(sigs, {{P(), B()}, {P()}});
    return sigs;
  };
  def.cost = [type](const OpContext& ctx) {
    return ElementwiseCost(ctx, InferGrad(ctx), FlopsPerElement(type));
  };
  def.gradient = std::move(gradient);
  return def;
}

}  // namespace

void RegisterActivationOps(graph::OpRegistry& registry) {
  registry.Register(Activation("relu", true, [](GraphBuilder& b, const OpNode& op, TensorId g) {
    return b.Add1("relu_grad", {g, op.outputs[0]});
  }));
  registry.Register(Activation("gelu", false, [](GraphBuilder& b, const OpNode& op, TensorId g) {
    return b.Add1("gelu_grad", {g, op.inputs[0]});
  }));
  // silu is not monotone (its minimum is near x = -1.28): only splits pass.
  registry.Register(Activation("silu", false, [](GraphBuilder& b, const OpNode& op, TensorId g) {
    return b.Add1("silu_grad", {g, op.inputs[0]});
  }));
  registry.Register(Activation("tanh", true, [](GraphBuilder& b, const OpNode& op, TensorId g) {
    return b.Add1("tanh_grad", {g, op.outputs[0]});
  }));
  registry.Register(Activation("exp", true, [](GraphBuilder& b, const OpNode& op, TensorId g) {
    return b.Add1("mul", {g, op.outputs[0]});
  }));

  // relu_grad(dy, y) = dy * (y > 0): linear in dy, and flat in y almost everywhere.
  registry.Register(
      GradHelper("relu_grad", [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
        if (!dy[0]) return {std::nullopt, std::nullopt};
        const TensorId y = op.inputs[1];
        return {b.Add1("relu_grad", {*dy[0], y}), std::nullopt};
      }));
  // tanh_grad(dy, y) = dy (1 - y^2): d/d(dy) = tanh_grad(g, y), d/dy = -2 y dy g.
  registry.Register(
      GradHelper("tanh_grad", [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
        if (!dy[0]) return {std::nullopt, std::nullopt};
        const TensorId g = *dy[0], dy_in = op.inputs[0], y = op.inputs[1];  // `op` may move
        const TensorId g_dy_y = b.Add1("mul", {b.Add1("mul", {g, dy_in}), y});
        return {b.Add1("tanh_grad", {g, y}), b.Add1("scalar_mul", {g_dy_y}, {{"value", -2.0}})};
      }));
  // gelu_grad has no gradient of its own (a second derivative of gelu is not built): autograd
  // reports it by name if a double backward ever needs one.
  registry.Register(GradHelper("gelu_grad", nullptr));
  registry.Register(GradHelper("silu_grad", nullptr));  // likewise
}

}  // namespace twinflow::ops
