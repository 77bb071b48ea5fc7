// Host side of the CUDA elementwise family: add, sub, mul, div (numpy broadcasting), bias_add,
// bias_add_grad, reduce_sum_like, broadcast_like. Checks as the CPU kernels, then one launch.
#include "kernels/cpu/elementwise_checks.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/reduction_launch.h"

namespace twinflow::kernels::cuda {
namespace {

constexpr std::initializer_list<DType> kNumeric = {DType::kF32, DType::kBF16, DType::kI32,
                                                   DType::kI64};
constexpr std::initializer_list<DType> kFloats = {DType::kF32, DType::kBF16};

void Binary(const KernelContext& ctx, const std::string& name, BinaryOp op) {
  const std::vector<std::vector<int64_t>> strides = CheckBinary(ctx, name);
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  const Strides3 s = MakeStrides3(out.shape(), strides, name);
  LaunchBinary(op, a.dtype(), a.raw(), b.raw(), out.raw(), out.numel(), s, 1.0,
               Env(ctx, name).stream);
}

// bias_add is add with the bias broadcast along every axis but `axis`.
void BiasAdd(const KernelContext& ctx) {
  const std::string name = "bias_add";
  const int axis = CheckBiasAdd(ctx);
  const Tensor& x = *ctx.inputs[0];
  const Tensor& bias = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  std::vector<int64_t> bias_strides(x.shape().rank(), 0);
  bias_strides[axis] = 1;
  const Strides3 s = MakeStrides3(x.shape(), {x.shape().Strides(), bias_strides}, name);
  LaunchBinary(BinaryOp::kAdd, x.dtype(), x.raw(), bias.raw(), out.raw(), out.numel(), s, 1.0,
               Env(ctx, name).stream);
}

void BiasAddGrad(const KernelContext& ctx) {
  const std::string name = "bias_add_grad";
  const int axis = CheckBiasAddGrad(ctx);
  const Tensor& dy = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  std::vector<bool> reduced(dy.shape().rank(), true);
  reduced[axis] = false;
  LaunchReduce(ReduceKind::kSum, dy.dtype(), dy.raw(), out.raw(),
               MakeReduceSpace(dy.shape(), reduced, name), 1.0, Env(ctx, name).stream);
}

// reduce_sum_like(dy, like): dy summed over the axes `like` broadcasts.
void ReduceSumLike(const KernelContext& ctx) {
  const std::string name = "reduce_sum_like";
  const std::vector<int64_t> strides = CheckReduceSumLike(ctx);
  const Tensor& dy = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  std::vector<bool> reduced(dy.shape().rank());
  for (int d = 0; d < dy.shape().rank(); ++d) reduced[d] = strides[d] == 0 && dy.shape()[d] != 1;
  LaunchReduce(ReduceKind::kSum, dy.dtype(), dy.raw(), out.raw(),
               MakeReduceSpace(dy.shape(), reduced, name), 1.0, Env(ctx, name).stream);
}

void BroadcastLike(const KernelContext& ctx) {
  const std::string name = "broadcast_like";
  const std::vector<int64_t> strides = CheckBroadcastLike(ctx);
  const Tensor& x = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  const Strides3 s = MakeStrides3(out.shape(), {strides}, name);
  LaunchBinary(BinaryOp::kFirst, x.dtype(), x.raw(), nullptr, out.raw(), out.numel(), s, 1.0,
               Env(ctx, name).stream);
}

}  // namespace

void RegisterElementwiseCudaKernels(KernelRegistry& registry) {
  const std::pair<const char*, BinaryOp> binaries[] = {
      {"add", BinaryOp::kAdd}, {"sub", BinaryOp::kSub}, {"mul", BinaryOp::kMul}};
  for (const auto& [name, op] : binaries) {
    const std::string type = name;
    RegisterCuda(registry, type, kNumeric,
                 [type, op](const KernelContext& ctx) { Binary(ctx, type, op); });
  }
  RegisterCuda(registry, "div", kFloats,
               [](const KernelContext& ctx) { Binary(ctx, "div", BinaryOp::kDiv); });
  RegisterCuda(registry, "bias_add", kNumeric, BiasAdd);
  RegisterCuda(registry, "bias_add_grad", kNumeric, BiasAddGrad);
  RegisterCuda(registry, "reduce_sum_like", kNumeric, ReduceSumLike);
  RegisterCuda(registry, "broadcast_like", kNumeric, BroadcastLike);
}

}  // namespace twinflow::kernels::cuda
