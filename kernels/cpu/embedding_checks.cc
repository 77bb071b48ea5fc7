// One definition of the embedding kernels' checks, for the CPU and CUDA kernels alike.
#include "kernels/cpu/embedding_checks.h"

#include <string>
#include <vector>

#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
namespace {

// Checks the ids' dtype, the table's rank and that `rowwise` is ids.shape + [width].
EmbeddingTable CheckTable(const Tensor& table, const char* role, const Tensor& ids,
                          const Tensor& rowwise, const char* rowwise_role, const char* op) {
  CheckIndexDType(ids, op, "ids");
  if (table.shape().rank() != 2) {
    throw ShapeError(std::string(op) + ": " + role + " must have rank 2, got " +
                     table.shape().ToString());
  }
  std::vector<int64_t> dims = ids.shape().dims();
  dims.push_back(table.shape()[1]);
  CheckShape(rowwise, Shape(dims), op, rowwise_role);
  return EmbeddingTable{table.shape()[0], table.shape()[1]};
}

}  // namespace

EmbeddingTable CheckEmbedding(const KernelContext& ctx) {
  const char* op = "embedding";
  CheckArity(ctx, 2, 1, op);
  const Tensor& weight = *ctx.inputs[0];
  const Tensor& out = *ctx.outputs[0];
  const EmbeddingTable table = CheckTable(weight, "weight", *ctx.inputs[1], out, "output", op);
  CheckDType(out, weight.dtype(), op, "output");
  return table;
}

EmbeddingTable CheckEmbeddingGrad(const KernelContext& ctx) {
  const char* op = "embedding_grad";
  CheckArity(ctx, 2, 1, op);
  const Tensor& dy = *ctx.inputs[0];
  const Tensor& dweight = *ctx.outputs[0];
  const EmbeddingTable table = CheckTable(dweight, "dweight", *ctx.inputs[1], dy, "dy", op);
  CheckDType(dweight, dy.dtype(), op, "dweight");
  return table;
}

}  // namespace twinflow::kernels
