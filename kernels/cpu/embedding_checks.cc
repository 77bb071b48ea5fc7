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

RotaryView CheckRotary(const KernelContext& ctx) {
  const char* op = "rotary";
  CheckArity(ctx, 1, 1, op);
  const Tensor& x = *ctx.inputs[0];
  if (x.shape().rank() != 3) {
    throw ShapeError(std::string(op) + ": x must be [batch, seq, width], got " +
                     x.shape().ToString());
  }
  CheckShape(*ctx.outputs[0], x.shape(), op, "output");
  CheckDType(*ctx.outputs[0], x.dtype(), op, "output");
  RotaryView view{x.shape()[0], x.shape()[1], x.shape()[2], ctx.attrs.GetInt("head_dim", 0)};
  // A shard must hold whole heads: a pair (i, i + d/2) never straddles two devices.
  const int64_t first_column = InputRange(ctx, 0, 2).begin;
  if (view.head_dim <= 0 || view.head_dim % 2 != 0 || view.width % view.head_dim != 0 ||
      first_column % view.head_dim != 0) {
    throw InvalidArgumentError(std::string(op) + ": head_dim " + std::to_string(view.head_dim) +
                               " must be even and tile the columns [" +
                               std::to_string(first_column) + ", " +
                               std::to_string(first_column + view.width) + ") this shard holds");
  }
  view.first_position = InputRange(ctx, 0, 1).begin;
  view.theta = ctx.attrs.GetDouble("theta", 1e4);
  view.inverse = ctx.attrs.GetBool("inverse", false);
  return view;
}

}  // namespace twinflow::kernels
