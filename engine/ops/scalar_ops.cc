// Part of the elementwise family (registered by RegisterElementwiseOps): scalar_add,
// scalar_mul (attr "value"), scalar_pow (attr "exponent"), identity and cast (attr "dtype").
#include <cmath>

#include "engine/core/error.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

constexpr ReduceOp kSum = ReduceOp::kSum;
constexpr ReduceOp kMax = ReduceOp::kMax;
constexpr ReduceOp kMin = ReduceOp::kMin;

OpDef UnaryDef(const std::string& type) {
  OpDef def;
  def.type = type;
  def.min_inputs = 1;
  def.max_inputs = 1;
  return def;
}

// Every split, B, then `in -> out` for each listed pair of partial kinds.
std::vector<SbpSignature> UnarySignatures(const Shape& shape,
                                          const std::vector<std::pair<ReduceOp, ReduceOp>>& pass) {
  std::vector<SbpSignature> sigs = BroadcastSplitSignatures({shape}, shape);
  for (const auto& [in, out] : pass) AddSignature(sigs, {{P(in)}, {P(out)}});
  return sigs;
}

std::vector<TensorMeta> InferNumeric(const OpContext& ctx, bool float_only) {
  CheckInputCount(ctx, 1);
  if (float_only) CheckFloat(ctx, 0);
  return {ctx.inputs[0]};
}

bool IsIntegral(double value) { return std::isfinite(value) && value == std::floor(value); }

OpDef ScalarAdd() {
  OpDef def = UnaryDef("scalar_add");
  def.infer = [](const OpContext& ctx) {
    ctx.attrs.GetDouble("value");
    return InferNumeric(ctx, false);
  };
  // x + c is monotone, so max and min pass; a sum of parts would add c once per device.
  def.signatures = [](const OpContext& ctx, int64_t) {
    return UnarySignatures(ctx.inputs[0].shape, {{kMax, kMax}, {kMin, kMin}});
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 1); };
  def.gradient = [](GraphBuilder&, const OpNode&, const Grads& dy) -> Grads { return {dy[0]}; };
  return def;
}

OpDef ScalarMul() {
  OpDef def = UnaryDef("scalar_mul");
  def.infer = [](const OpContext& ctx) {
    ctx.attrs.GetDouble("value");
    return InferNumeric(ctx, false);
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    const double value = ctx.attrs.GetDouble("value");
    std::vector<std::pair<ReduceOp, ReduceOp>> pass;
    // Integer results are truncated, which breaks linearity unless the factor is integral.
    if (IsFloating(ctx.inputs[0].dtype) || IsIntegral(value)) pass.push_back({kSum, kSum});
    if (value >= 0) {
      pass.insert(pass.end(), {{kMax, kMax}, {kMin, kMin}});
    } else {
      pass.insert(pass.end(), {{kMax, kMin}, {kMin, kMax}});
    }
    return UnarySignatures(ctx.inputs[0].shape, pass);
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 1); };
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt};
    return {b.Add1("scalar_mul", {*dy[0]}, {{"value", op.attrs.GetDouble("value")}})};
  };
  return def;
}

// x^e in floating point; negative x with a non-integral e gives NaN, as std::pow does.
OpDef ScalarPow() {
  OpDef def = UnaryDef("scalar_pow");
  def.infer = [](const OpContext& ctx) {
    ctx.attrs.GetDouble("exponent");
    return InferNumeric(ctx, true);
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    return UnarySignatures(ctx.inputs[0].shape, {});
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 4); };
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt};
    const double e = op.attrs.GetDouble("exponent");
    const TensorId power = b.Add1("scalar_pow", {op.inputs[0]}, {{"exponent", e - 1}});
    const TensorId slope = b.Add1("scalar_mul", {power}, {{"value", e}});
    return {b.Add1("mul", {*dy[0], slope})};
  };
  return def;
}

OpDef Identity() {
  OpDef def = UnaryDef("identity");
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 1);
    return std::vector<TensorMeta>{ctx.inputs[0]};
  };
  // Sums of bf16/f16 parts are rounded per part, so storage types keep only max and min.
  def.signatures = [](const OpContext& ctx, int64_t) {
    std::vector<std::pair<ReduceOp, ReduceOp>> pass = {{kMax, kMax}, {kMin, kMin}};
    if (!IsStorageOnly(ctx.inputs[0].dtype)) pass.insert(pass.begin(), {kSum, kSum});
    return UnarySignatures(ctx.inputs[0].shape, pass);
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 0); };
  def.gradient = [](GraphBuilder&, const OpNode&, const Grads& dy) -> Grads { return {dy[0]}; };
  return def;
}

DType CastTarget(const OpContext& ctx) {
  const std::string& text = ctx.attrs.GetString("dtype");
  try {
    return ParseDType(text);
  } catch (const Error&) {
    ThrowInvalid(ctx, "attribute 'dtype' = '" + text + "' is not a dtype");
  }
}

std::vector<TensorMeta> InferCast(const OpContext& ctx) {
  CheckInputCount(ctx, 1);
  return {{ctx.inputs[0].shape, CastTarget(ctx)}};
}

// A cast from a computed type to a computed float type (or between integers, modulo 2^n) keeps
// sums; every cast but integer narrowing is monotone, so it keeps max and min.
std::vector<SbpSignature> CastSignatures(const OpContext& ctx) {
  const DType from = ctx.inputs[0].dtype;
  const DType to = CastTarget(ctx);
  std::vector<std::pair<ReduceOp, ReduceOp>> pass;
  const bool to_float = to == DType::kF32 || to == DType::kF64;
  const bool int_to_int = !IsFloating(from) && !IsFloating(to);
  // Float parts add up to the value only to their own precision: widening them would expose
  // that rounding, so f32 -> f64 (like bf16/f16 sources) keeps no sums.
  const bool widens = IsStorageOnly(from) || (from == DType::kF32 && to == DType::kF64);
  // Unless the sum of the wide parts is what is meant: a narrowing cast's gradient widens
  // partial gradients, and summing them wide is mixed precision's fp32 gradient accumulation
  // and reduction (Megatron's --accumulate-allreduce-grads-in-fp32).
  const bool sums_wide = ctx.attrs.GetBool("sum_wide", false);
  if ((to_float || int_to_int) && (!widens || sums_wide)) pass.push_back({kSum, kSum});
  if (!(int_to_int && DTypeSize(to) < DTypeSize(from))) {
    pass.insert(pass.end(), {{kMax, kMax}, {kMin, kMin}});
  }
  return UnarySignatures(ctx.inputs[0].shape, pass);
}

OpDef Cast() {
  OpDef def = UnaryDef("cast");
  def.infer = InferCast;
  def.signatures = [](const OpContext& ctx, int64_t) { return CastSignatures(ctx); };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, InferCast(ctx), 1); };
  // Integer sides carry no gradient.
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    const DType from = b.meta(op.inputs[0]).dtype;
    const DType to = b.meta(op.outputs[0]).dtype;
    if (!dy[0] || !IsFloating(from) || !IsFloating(to)) return {std::nullopt};
    Attrs attrs{{"dtype", std::string(DTypeName(from))}};
    if (DTypeSize(from) > DTypeSize(to)) attrs.Set("sum_wide", true);
    return {b.Add1("cast", {*dy[0]}, std::move(attrs))};
  };
  return def;
}

}  // namespace

void RegisterScalarOps(graph::OpRegistry& registry) {
  registry.Register(ScalarAdd());
  registry.Register(ScalarMul());
  registry.Register(ScalarPow());
  registry.Register(Identity());
  registry.Register(Cast());
}

}  // namespace twinflow::ops
