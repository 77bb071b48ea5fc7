// Host side of embedding and embedding_grad on CUDA: the weight's (dweight's) row range in the
// logical table selects the ids this device handles; ids are range-checked on the device.
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/device_fault.h"
#include "kernels/cuda/embedding_launch.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/softmax_launch.h"

namespace twinflow::kernels::cuda {
namespace {

// Checks the table's rank and that `rowwise` is ids.shape + [width]; returns (rows, width).
std::pair<int64_t, int64_t> CheckTable(const Tensor& table, const char* role, const Tensor& ids,
                                       const Tensor& rowwise, const char* rowwise_role,
                                       const char* op) {
  CheckIndexDType(ids, op, "ids");
  if (table.shape().rank() != 2) {
    throw ShapeError(std::string(op) + ": " + role + " must have rank 2, got " +
                     table.shape().ToString());
  }
  std::vector<int64_t> dims = ids.shape().dims();
  dims.push_back(table.shape()[1]);
  CheckShape(rowwise, Shape(dims), op, rowwise_role);
  return {table.shape()[0], table.shape()[1]};
}

void Embedding(const KernelContext& ctx) {
  const char* op = "embedding";
  CheckArity(ctx, 2, 1, op);
  const Tensor& weight = *ctx.inputs[0];
  const Tensor& ids = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  const auto [rows, width] = CheckTable(weight, "weight", ids, out, "output", op);
  CheckDType(out, weight.dtype(), op, "output");
  const Range range = InputRange(ctx, 0, 0);
  const IdSlice s{ids.raw(), ids.dtype() == DType::kI64, ids.numel(), range.begin, range.end, rows};
  const CudaEnv& env = Env(ctx, op);
  LaunchCheckIndices(s.ids, s.is64, s.count, LogicalInputShape(ctx, 0)[0], env.error_flag,
                     kEmbeddingIdOutOfRange, env.stream);
  LaunchEmbedding(weight.dtype(), weight.raw(), s, out.raw(), width, env.stream);
}

void EmbeddingGrad(const KernelContext& ctx) {
  const char* op = "embedding_grad";
  CheckArity(ctx, 2, 1, op);
  const Tensor& dy = *ctx.inputs[0];
  const Tensor& ids = *ctx.inputs[1];
  Tensor& dweight = *ctx.outputs[0];
  const auto [rows, width] = CheckTable(dweight, "dweight", ids, dy, "dy", op);
  CheckDType(dweight, dy.dtype(), op, "dweight");
  const Range range = OutputRange(ctx, 0, 0);
  const IdSlice s{ids.raw(), ids.dtype() == DType::kI64, ids.numel(), range.begin, range.end, rows};
  const CudaEnv& env = Env(ctx, op);
  LaunchCheckIndices(s.ids, s.is64, s.count, ctx.attrs.GetInt("num_embeddings"), env.error_flag,
                     kEmbeddingGradIdOutOfRange, env.stream);
  LaunchEmbeddingGrad(dy.dtype(), dy.raw(), s, dweight.raw(), width, env.stream);
}

}  // namespace

void RegisterEmbeddingCudaKernels(KernelRegistry& registry) {
  RegisterCuda(registry, "embedding", {DType::kF32, DType::kBF16}, Embedding);
  RegisterCuda(registry, "embedding_grad", {DType::kF32, DType::kBF16}, EmbeddingGrad);
}

}  // namespace twinflow::kernels::cuda
