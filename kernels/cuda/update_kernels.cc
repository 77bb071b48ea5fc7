// Host side of the CUDA optimizer updates: sgd_update, sgd_momentum_update, adam_update and
// step_increment. Adam's step counter stays on the device and is read by the kernel.
#include "kernels/cpu/update_kernels.h"

#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/update_launch.h"

namespace twinflow::kernels::cuda {
namespace {

// Every input but the first `inputs` and every output shaped like input 0, of its dtype.
void CheckLike(const KernelContext& ctx, int inputs, const std::string& op) {
  const Tensor& p = *ctx.inputs[0];
  for (int i = 1; i < inputs; ++i) {
    CheckShape(*ctx.inputs[i], p.shape(), op, "input " + std::to_string(i));
    CheckDType(*ctx.inputs[i], p.dtype(), op, "input " + std::to_string(i));
  }
  for (size_t o = 0; o < ctx.outputs.size(); ++o) {
    CheckShape(*ctx.outputs[o], p.shape(), op, "output " + std::to_string(o));
    CheckDType(*ctx.outputs[o], p.dtype(), op, "output " + std::to_string(o));
  }
}

// The gradient factor's device address (null without one), after checking its shape and dtype.
const float* FactorOf(const KernelContext& ctx, const UpdateScalars& at, const std::string& op) {
  return at.factor < 0 ? nullptr : F32ScalarOn(*ctx.inputs[at.factor], op, "the gradient factor");
}

// The attrs, and the learning rate's device address when it is an input.
UpdateAttrs AttrsOf(const KernelContext& ctx, const UpdateScalars& at, const std::string& op) {
  UpdateAttrs a;
  a.lr = ctx.attrs.GetDouble("lr");
  if (at.lr >= 0) a.lr_on_device = F32ScalarOn(*ctx.inputs[at.lr], op, "the learning rate");
  a.weight_decay = ctx.attrs.GetDouble("weight_decay", 0);
  a.momentum = ctx.attrs.GetDouble("momentum", 0);
  a.beta1 = ctx.attrs.GetDouble("beta1", 0.9);
  a.beta2 = ctx.attrs.GetDouble("beta2", 0.999);
  a.epsilon = ctx.attrs.GetDouble("epsilon", 1e-8);
  a.decoupled = ctx.attrs.GetBool("decoupled", false);
  return a;
}

void Sgd(const KernelContext& ctx) {
  const UpdateScalars at = CheckUpdateArity(ctx, 2, 1, "sgd_update");
  const float* factor = FactorOf(ctx, at, "sgd_update");
  CheckLike(ctx, 2, "sgd_update");
  const Tensor& p = *ctx.inputs[0];
  LaunchSgd(p.dtype(), p.raw(), ctx.inputs[1]->raw(), ctx.outputs[0]->raw(), p.numel(),
            AttrsOf(ctx, at, "sgd_update"), factor, Env(ctx, "sgd_update").stream);
}

void SgdMomentum(const KernelContext& ctx) {
  const char* op = "sgd_momentum_update";
  const UpdateScalars at = CheckUpdateArity(ctx, 3, 2, op);
  const float* factor = FactorOf(ctx, at, op);
  CheckLike(ctx, 3, op);
  const Tensor& p = *ctx.inputs[0];
  LaunchSgdMomentum(p.dtype(), p.raw(), ctx.inputs[1]->raw(), ctx.inputs[2]->raw(),
                    ctx.outputs[0]->raw(), ctx.outputs[1]->raw(), p.numel(), AttrsOf(ctx, at, op),
                    factor, Env(ctx, op).stream);
}

void Adam(const KernelContext& ctx) {
  const char* op = "adam_update";
  const UpdateScalars at = CheckUpdateArity(ctx, 5, 3, op);
  const float* factor = FactorOf(ctx, at, op);
  CheckLike(ctx, 4, op);
  const Tensor& step = *ctx.inputs[4];
  if (step.numel() != 1) {
    throw ShapeError("adam_update: step counter has shape " + step.shape().ToString());
  }
  const Tensor& p = *ctx.inputs[0];
  LaunchAdam(p.dtype(), p.raw(), ctx.inputs[1]->raw(), ctx.inputs[2]->raw(), ctx.inputs[3]->raw(),
             step.raw(), step.dtype(), ctx.outputs[0]->raw(), ctx.outputs[1]->raw(),
             ctx.outputs[2]->raw(), p.numel(), AttrsOf(ctx, at, op), factor, Env(ctx, op).stream);
}

void StepIncrement(const KernelContext& ctx) {
  const float* factor =
      FactorOf(ctx, CheckUpdateArity(ctx, 1, 1, "step_increment"), "step_increment");
  CheckLike(ctx, 1, "step_increment");
  const Tensor& x = *ctx.inputs[0];
  LaunchStepIncrement(x.dtype(), x.raw(), ctx.outputs[0]->raw(), x.numel(), factor,
                      Env(ctx, "step_increment").stream);
}

}  // namespace

void RegisterUpdateCudaKernels(KernelRegistry& registry) {
  const auto floats = {DType::kF32, DType::kBF16};
  RegisterCuda(registry, "sgd_update", floats, Sgd);
  RegisterCuda(registry, "sgd_momentum_update", floats, SgdMomentum);
  RegisterCuda(registry, "adam_update", floats, Adam);
  RegisterCuda(registry, "step_increment", floats, StepIncrement);
}

}  // namespace twinflow::kernels::cuda
