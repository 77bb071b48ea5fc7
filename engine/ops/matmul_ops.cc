// The matmul family: matmul (2-D x 2-D) and batch_matmul (rank >= 3, equal batch dims), both
// with transpose_a / transpose_b on the last two axes.
#include "engine/core/error.h"
#include "engine/ops/op_families.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

// Where m, k and n sit in a and b (after the batch axes), and their extents.
struct MatmulDims {
  int batch_rank = 0;
  int a_m = 0, a_k = 0, b_k = 0, b_n = 0;  // axes
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> batch;
};

MatmulDims Dims(const OpContext& ctx, bool batched) {
  CheckInputCount(ctx, 2);
  CheckSameDType(ctx);
  CheckFloat(ctx, 0);
  const Shape& a = ctx.inputs[0].shape;
  const Shape& b = ctx.inputs[1].shape;
  if (batched) {
    if (a.rank() < 3 || a.rank() != b.rank()) {
      ThrowShape(
          ctx, "inputs must have the same rank >= 3, got " + a.ToString() + " and " + b.ToString());
    }
  } else {
    CheckRank(ctx, 0, 2);
    CheckRank(ctx, 1, 2);
  }
  MatmulDims dims;
  dims.batch_rank = a.rank() - 2;
  for (int i = 0; i < dims.batch_rank; ++i) {
    if (a[i] != b[i]) {
      ThrowShape(ctx, "batch dimensions differ: " + a.ToString() + " and " + b.ToString());
    }
    dims.batch.push_back(a[i]);
  }
  const bool ta = ctx.attrs.GetBool("transpose_a", false);
  const bool tb = ctx.attrs.GetBool("transpose_b", false);
  const int r = dims.batch_rank;
  dims.a_m = r + (ta ? 1 : 0);
  dims.a_k = r + (ta ? 0 : 1);
  dims.b_k = r + (tb ? 1 : 0);
  dims.b_n = r + (tb ? 0 : 1);
  dims.m = a[dims.a_m];
  dims.k = a[dims.a_k];
  dims.n = b[dims.b_n];
  if (b[dims.b_k] != dims.k) {
    ThrowShape(ctx, "contracted dimensions differ: a " + a.ToString() +
                        " (transpose_a=" + (ta ? "true" : "false") + ") and b " + b.ToString() +
                        " (transpose_b=" + (tb ? "true" : "false") + ")");
  }
  return dims;
}

std::vector<TensorMeta> Infer(const OpContext& ctx, bool batched) {
  const MatmulDims dims = Dims(ctx, batched);
  std::vector<int64_t> out = dims.batch;
  out.push_back(dims.m);
  out.push_back(dims.n);
  return {TensorMeta{Shape(std::move(out)), ctx.inputs[0].dtype}};
}

std::vector<SbpSignature> Signatures(const OpContext& ctx, bool batched) {
  const MatmulDims d = Dims(ctx, batched);
  const int r = d.batch_rank;
  std::vector<SbpSignature> sigs;
  for (int i = 0; i < r; ++i) AddSignature(sigs, {{S(i), S(i)}, {S(i)}});  // batch split
  AddSignature(sigs, {{S(d.a_m), B()}, {S(r)}});                           // rows of a
  AddSignature(sigs, {{B(), S(d.b_n)}, {S(r + 1)}});                       // columns of b
  AddSignature(sigs, {{S(d.a_k), S(d.b_k)}, {P()}});                       // contracted axis
  AddSignature(sigs, {{P(), B()}, {P()}});
  AddSignature(sigs, {{B(), P()}, {P()}});
  AddSignature(sigs, {{B(), B()}, {B()}});
  return sigs;
}

graph::OpCost Cost(const OpContext& ctx, bool batched) {
  const MatmulDims d = Dims(ctx, batched);
  int64_t batch = 1;
  for (int64_t extent : d.batch) batch *= extent;
  graph::OpCost cost;
  cost.flops = 2.0 * static_cast<double>(batch) * static_cast<double>(d.m) *
               static_cast<double>(d.n) * static_cast<double>(d.k);
  cost.bytes_read = InputBytes(ctx);
  cost.bytes_written = batch * d.m * d.n * DTypeSize(ctx.inputs[0].dtype);
  cost.gemm = {batch, d.m, d.n, d.k};
  return cost;
}

Attrs Transposes(bool ta, bool tb) { return Attrs{{"transpose_a", ta}, {"transpose_b", tb}}; }

// With C = op(A) op(B): d op(A) = dC op(B)^T and d op(B) = op(A)^T dC, transposed back where
// A or B was stored transposed.
std::vector<std::optional<TensorId>> Gradient(GraphBuilder& builder, const OpNode& op,
                                              const std::vector<std::optional<TensorId>>& dy) {
  if (!dy[0]) return {std::nullopt, std::nullopt};
  const bool ta = op.attrs.GetBool("transpose_a", false);
  const bool tb = op.attrs.GetBool("transpose_b", false);
  const TensorId a = op.inputs[0];
  const TensorId b = op.inputs[1];
  const TensorId g = *dy[0];
  const std::string type = op.type;  // `op` may move as ops are added
  const TensorId da = ta ? builder.Add1(type, {b, g}, Transposes(tb, true))
                         : builder.Add1(type, {g, b}, Transposes(false, !tb));
  const TensorId db = tb ? builder.Add1(type, {g, a}, Transposes(true, ta))
                         : builder.Add1(type, {a, g}, Transposes(!ta, false));
  return {da, db};
}

// Megatron's names, read off the output [..., m, n]: n split is a column-parallel linear, a
// partial sum (k split) a row-parallel one, m split divides the rows (tokens: data or
// sequence), a leading axis the batch (attention's heads).
std::string Parallelism(const OpContext& ctx, const graph::SbpSignature& sig) {
  const sbp::Sbp& out = sig.outputs[0];
  if (out.is_partial()) return "row";
  if (out.is_broadcast()) return "replicated";
  const int rank = ctx.inputs[0].shape.rank();
  if (out.axis == rank - 1) return "column";
  if (out.axis == rank - 2) return "rows";
  return "batch S(" + std::to_string(out.axis) + ")";
}

graph::OpDef MakeDef(const std::string& type, bool batched) {
  graph::OpDef def;
  def.type = type;
  def.min_inputs = 2;
  def.max_inputs = 2;
  def.infer = [batched](const OpContext& ctx) { return Infer(ctx, batched); };
  def.signatures = [batched](const OpContext& ctx, int64_t) { return Signatures(ctx, batched); };
  def.cost = [batched](const OpContext& ctx) { return Cost(ctx, batched); };
  def.kernel_class = graph::KernelClass::kGemm;
  def.gradient = Gradient;
  def.parallelism = Parallelism;
  return def;
}

}  // namespace

void RegisterMatmulOps(graph::OpRegistry& registry) {
  registry.Register(MakeDef("matmul", false));
  registry.Register(MakeDef("batch_matmul", true));
}

}  // namespace twinflow::ops
