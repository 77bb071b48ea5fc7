// bf16 and f16 on the CPU: each f32 kernel computes them by converting its 16-bit inputs to f32
// on load and rounding its 16-bit outputs once on store (round to nearest even). Everything in
// between, the GEMM's and every reduction's accumulation included, is f32, which is what the
// GPU kernels do in registers and what mixed-precision training expects of its kernels. The
// conversions cost a pass over each 16-bit tensor; the CPU is the reference here, not the
// fast path.
#include <set>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/kernel_families.h"

namespace twinflow::kernels {
namespace {

// Ops that stay f32 only: optimizer updates and variables hold the fp32 master weights and
// state of mixed-precision training, and the gradient statistics read the fp32 gradients.
const std::set<std::string> kF32Only = {
    "sgd_update",  "sgd_momentum_update", "adam_update",       "step_increment", "variable",
    "sum_squares", "grad_factor",         "loss_scale_update", "lr_schedule"};

Tensor Widen(const Tensor& narrow) {
  Tensor wide(narrow.shape(), DType::kF32);
  float* out = wide.data<float>();
  const auto* bits = reinterpret_cast<const uint16_t*>(narrow.raw());
  const bool bf16 = narrow.dtype() == DType::kBF16;
  for (int64_t i = 0, n = narrow.numel(); i < n; ++i) {
    out[i] = bf16 ? BF16ToFloat(bits[i]) : F16ToFloat(bits[i]);
  }
  return wide;
}

void Narrow(const Tensor& wide, Tensor& narrow) {
  const float* in = wide.data<float>();
  auto* bits = reinterpret_cast<uint16_t*>(narrow.raw());
  const bool bf16 = narrow.dtype() == DType::kBF16;
  for (int64_t i = 0, n = narrow.numel(); i < n; ++i) {
    bits[i] = bf16 ? FloatToBF16(in[i]) : FloatToF16(in[i]);
  }
}

Kernel Widened(Kernel f32) {
  return [f32 = std::move(f32)](const KernelContext& ctx) {
    // Reserved up front: the context points into these vectors.
    std::vector<Tensor> wide_inputs, wide_outputs;
    wide_inputs.reserve(ctx.inputs.size());
    wide_outputs.reserve(ctx.outputs.size());
    KernelContext wide = ctx;
    for (auto& input : wide.inputs) {
      if (IsStorageOnly(input->dtype())) input = &wide_inputs.emplace_back(Widen(*input));
    }
    for (auto& output : wide.outputs) {
      if (IsStorageOnly(output->dtype())) {
        output = &wide_outputs.emplace_back(output->shape(), DType::kF32);
      }
    }
    f32(wide);
    for (size_t i = 0, w = 0; i < ctx.outputs.size(); ++i) {
      if (IsStorageOnly(ctx.outputs[i]->dtype())) Narrow(wide_outputs[w++], *ctx.outputs[i]);
    }
  };
}

}  // namespace

void RegisterWidenedKernels(KernelRegistry& registry) {
  for (const KernelKey& key : registry.Keys()) {
    if (key.device != DeviceType::kCpu || key.dtype != DType::kF32) continue;
    if (kF32Only.count(key.op_type)) continue;
    const Kernel& f32 = registry.Find(key);
    for (DType narrow : {DType::kBF16, DType::kF16}) {
      const KernelKey wide_key{key.op_type, key.device, narrow};
      if (!registry.Has(wide_key)) registry.Register(wide_key, Widened(f32));
    }
  }
}

}  // namespace twinflow::kernels
