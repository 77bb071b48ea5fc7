// CPU kernels of the optimizer updates (formulas as in PyTorch's SGD, Adam and AdamW).
#include "kernels/cpu/update_kernels.h"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>

#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
namespace {

void CheckLike(const KernelContext& ctx, int inputs, const std::string& op) {
  const Shape& shape = ctx.inputs[0]->shape();
  for (int i = 1; i < inputs; ++i)
    CheckShape(*ctx.inputs[i], shape, op, "input " + std::to_string(i));
  for (size_t o = 0; o < ctx.outputs.size(); ++o) {
    CheckShape(*ctx.outputs[o], shape, op, "output " + std::to_string(o));
  }
}

// The learning rate: its input when there is one, else attr lr.
double LearningRate(const KernelContext& ctx, const UpdateScalars& at, const std::string& op) {
  return at.lr >= 0 ? ScalarValue(*ctx.inputs[at.lr], op, "the learning rate")
                    : ctx.attrs.GetDouble("lr");
}

// The gradient factor's value (1 without one), or, when it is not finite, nullopt after copying
// inputs `kept` to the outputs in order (the step is skipped).
std::optional<double> FactorOrSkip(const KernelContext& ctx, const UpdateScalars& at,
                                   const std::string& op, std::initializer_list<int> kept) {
  if (at.factor < 0) return 1.0;
  const double factor = ScalarValue(*ctx.inputs[at.factor], op, "the gradient factor");
  if (std::isfinite(factor)) return factor;
  size_t o = 0;
  for (int i : kept) {
    if (ctx.inputs[i]->nbytes() > 0) {
      std::memcpy(ctx.outputs[o]->raw(), ctx.inputs[i]->raw(), ctx.inputs[i]->nbytes());
    }
    ++o;
  }
  return std::nullopt;
}

void SgdUpdate(const KernelContext& ctx) {
  const UpdateScalars at = CheckUpdateArity(ctx, 2, 1, "sgd_update");
  CheckLike(ctx, 2, "sgd_update");
  const std::optional<double> factor = FactorOrSkip(ctx, at, "sgd_update", {0});
  if (!factor) return;
  const float scale = static_cast<float>(*factor);
  const float lr = static_cast<float>(LearningRate(ctx, at, "sgd_update"));
  const float wd = static_cast<float>(ctx.attrs.GetDouble("weight_decay", 0));
  const float* p = ctx.inputs[0]->data<float>();
  const float* g = ctx.inputs[1]->data<float>();
  float* out = ctx.outputs[0]->data<float>();
  for (int64_t i = 0, end = ctx.outputs[0]->numel(); i < end; ++i)
    out[i] = p[i] - lr * (scale * g[i] + wd * p[i]);
}

void SgdMomentumUpdate(const KernelContext& ctx) {
  const UpdateScalars at = CheckUpdateArity(ctx, 3, 2, "sgd_momentum_update");
  CheckLike(ctx, 3, "sgd_momentum_update");
  const std::optional<double> factor = FactorOrSkip(ctx, at, "sgd_momentum_update", {0, 2});
  if (!factor) return;
  const float scale = static_cast<float>(*factor);
  const float lr = static_cast<float>(LearningRate(ctx, at, "sgd_momentum_update"));
  const float mu = static_cast<float>(ctx.attrs.GetDouble("momentum", 0));
  const float wd = static_cast<float>(ctx.attrs.GetDouble("weight_decay", 0));
  const float* p = ctx.inputs[0]->data<float>();
  const float* g = ctx.inputs[1]->data<float>();
  const float* buf = ctx.inputs[2]->data<float>();
  float* p_out = ctx.outputs[0]->data<float>();
  float* buf_out = ctx.outputs[1]->data<float>();
  for (int64_t i = 0, end = ctx.outputs[0]->numel(); i < end; ++i) {
    buf_out[i] = mu * buf[i] + scale * g[i] + wd * p[i];
    p_out[i] = p[i] - lr * buf_out[i];
  }
}

// `step` holds the number of updates done so far; this one is number step + 1.
void AdamUpdate(const KernelContext& ctx) {
  const UpdateScalars at = CheckUpdateArity(ctx, 5, 3, "adam_update");
  CheckLike(ctx, 4, "adam_update");
  const double t = ScalarValue(*ctx.inputs[4], "adam_update", "step counter") + 1;
  const std::optional<double> factor = FactorOrSkip(ctx, at, "adam_update", {0, 2, 3});
  if (!factor) return;
  const double lr = LearningRate(ctx, at, "adam_update");
  const double b1 = ctx.attrs.GetDouble("beta1", 0.9);
  const double b2 = ctx.attrs.GetDouble("beta2", 0.999);
  const double eps = ctx.attrs.GetDouble("epsilon", 1e-8);
  const double wd = ctx.attrs.GetDouble("weight_decay", 0);
  const bool decoupled = ctx.attrs.GetBool("decoupled", false);
  const double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
  const float* p = ctx.inputs[0]->data<float>();
  const float* g = ctx.inputs[1]->data<float>();
  const float* m = ctx.inputs[2]->data<float>();
  const float* v = ctx.inputs[3]->data<float>();
  float* p_out = ctx.outputs[0]->data<float>();
  float* m_out = ctx.outputs[1]->data<float>();
  float* v_out = ctx.outputs[2]->data<float>();
  for (int64_t i = 0, end = ctx.outputs[0]->numel(); i < end; ++i) {
    const double grad = *factor * g[i] + (decoupled ? 0.0 : wd * p[i]);
    const double m_new = b1 * m[i] + (1 - b1) * grad;
    const double v_new = b2 * v[i] + (1 - b2) * grad * grad;
    double update = (m_new / c1) / (std::sqrt(v_new / c2) + eps);
    if (decoupled) update += wd * p[i];
    p_out[i] = static_cast<float>(p[i] - lr * update);
    m_out[i] = static_cast<float>(m_new);
    v_out[i] = static_cast<float>(v_new);
  }
}

void StepIncrement(const KernelContext& ctx) {
  const UpdateScalars at = CheckUpdateArity(ctx, 1, 1, "step_increment");
  CheckLike(ctx, 1, "step_increment");
  if (!FactorOrSkip(ctx, at, "step_increment", {0})) return;
  for (int64_t i = 0, end = ctx.outputs[0]->numel(); i < end; ++i) {
    ctx.outputs[0]->SetDouble(i, ctx.inputs[0]->GetDouble(i) + 1);
  }
}

}  // namespace

UpdateScalars CheckUpdateArity(const KernelContext& ctx, int count, int outputs,
                               const std::string& op) {
  UpdateScalars at;
  int next = count;
  if (ctx.attrs.GetBool("lr_input", false)) at.lr = next++;
  if (ctx.inputs.size() == static_cast<size_t>(next + 1)) at.factor = next++;
  CheckArity(ctx, next, outputs, op);
  return at;
}

void RegisterUpdateKernels(KernelRegistry& registry) {
  RegisterCpu(registry, "sgd_update", {DType::kF32}, SgdUpdate);
  RegisterCpu(registry, "sgd_momentum_update", {DType::kF32}, SgdMomentumUpdate);
  RegisterCpu(registry, "adam_update", {DType::kF32}, AdamUpdate);
  RegisterCpu(registry, "step_increment", {DType::kF32}, StepIncrement);
}

}  // namespace twinflow::kernels
