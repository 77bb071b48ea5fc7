#include "engine/ops/op_helpers.h"

#include <algorithm>

#include "engine/core/error.h"

namespace twinflow::ops {

void ThrowShape(const OpContext& ctx, const std::string& problem) {
  throw ShapeError(ctx.type + ": " + problem);
}

void ThrowInvalid(const OpContext& ctx, const std::string& problem) {
  throw InvalidArgumentError(ctx.type + ": " + problem);
}

namespace {

std::string InputName(int index, const std::string& role) {
  return role.empty() ? "input " + std::to_string(index) : role;
}

}  // namespace

void CheckInputCount(const OpContext& ctx, int count) {
  if (static_cast<int>(ctx.inputs.size()) != count) {
    ThrowInvalid(ctx, "expects " + std::to_string(count) + " input(s), got " +
                          std::to_string(ctx.inputs.size()));
  }
}

void CheckRank(const OpContext& ctx, int index, int rank, const std::string& role) {
  if (ctx.inputs[index].shape.rank() != rank) {
    ThrowShape(ctx, InputName(index, role) + " must have rank " + std::to_string(rank) + ", got " +
                        ctx.inputs[index].ToString());
  }
}

void CheckMinRank(const OpContext& ctx, int index, int rank, const std::string& role) {
  if (ctx.inputs[index].shape.rank() < rank) {
    ThrowShape(ctx, InputName(index, role) + " must have rank >= " + std::to_string(rank) +
                        ", got " + ctx.inputs[index].ToString());
  }
}

void CheckShapeEq(const OpContext& ctx, int index, const Shape& expected, const std::string& role) {
  if (ctx.inputs[index].shape != expected) {
    ThrowShape(ctx, InputName(index, role) + " must have shape " + expected.ToString() + ", got " +
                        ctx.inputs[index].ToString());
  }
}

void CheckSameDType(const OpContext& ctx) {
  for (size_t i = 1; i < ctx.inputs.size(); ++i) CheckSameDType(ctx, 0, static_cast<int>(i));
}

void CheckSameDType(const OpContext& ctx, int a, int b) {
  if (ctx.inputs[b].dtype != ctx.inputs[a].dtype) {
    ThrowInvalid(ctx, "input " + std::to_string(b) + " is " + ctx.inputs[b].ToString() +
                          " but input " + std::to_string(a) + " is " + ctx.inputs[a].ToString());
  }
}

void CheckFloat(const OpContext& ctx, int index, const std::string& role) {
  if (!IsFloating(ctx.inputs[index].dtype)) {
    ThrowInvalid(ctx, InputName(index, role) + " must be f32, f64, bf16 or f16, got " +
                          ctx.inputs[index].ToString());
  }
}

void CheckWideFloat(const OpContext& ctx, int index, const std::string& role) {
  if (!IsFloating(ctx.inputs[index].dtype) || IsStorageOnly(ctx.inputs[index].dtype)) {
    ThrowInvalid(
        ctx, InputName(index, role) + " must be f32 or f64, got " + ctx.inputs[index].ToString());
  }
}

void CheckF32Scalar(const OpContext& ctx, int index, const std::string& what) {
  const TensorMeta& t = ctx.inputs[index];
  if (t.dtype != DType::kF32 || t.shape.numel() != 1 || t.shape.rank() > 1) {
    ThrowShape(ctx, what + " must be f32[] or f32[1], got " + t.ToString());
  }
}

void CheckIndex(const OpContext& ctx, int index, const std::string& role) {
  const DType dtype = ctx.inputs[index].dtype;
  if (dtype != DType::kI32 && dtype != DType::kI64) {
    ThrowInvalid(
        ctx, InputName(index, role) + " must be i32 or i64, got " + ctx.inputs[index].ToString());
  }
}

int NormalizeAxis(const OpContext& ctx, int64_t axis, int rank, const std::string& attr) {
  if (axis < -rank || axis >= rank) {
    ThrowInvalid(ctx, "attribute '" + attr + "' = " + std::to_string(axis) +
                          " is out of range for rank " + std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Shape InferBroadcast(const OpContext& ctx, const Shape& a, const Shape& b) {
  std::optional<Shape> out = BroadcastShapes(a, b);
  if (!out)
    ThrowShape(ctx, "shapes " + a.ToString() + " and " + b.ToString() + " do not broadcast");
  return *out;
}

bool BroadcastsTo(const Shape& small, const Shape& big) {
  std::optional<Shape> out = BroadcastShapes(small, big);
  return out && *out == big;
}

Shape DropLast(const Shape& shape) {
  std::vector<int64_t> dims = shape.dims();
  if (!dims.empty()) dims.pop_back();
  return Shape(std::move(dims));
}

Shape WithLast(const Shape& shape, int64_t extent) {
  std::vector<int64_t> dims = shape.dims();
  dims.push_back(extent);
  return Shape(std::move(dims));
}

int64_t Bytes(const graph::TensorMeta& meta) { return meta.shape.numel() * DTypeSize(meta.dtype); }

int64_t InputBytes(const OpContext& ctx) {
  int64_t total = 0;
  for (const graph::TensorMeta& meta : ctx.inputs) total += Bytes(meta);
  return total;
}

graph::OpCost ElementwiseCost(const OpContext& ctx, const std::vector<graph::TensorMeta>& outputs,
                              double flops_per_element) {
  graph::OpCost cost;
  cost.bytes_read = InputBytes(ctx);
  for (const graph::TensorMeta& meta : outputs) {
    cost.bytes_written += Bytes(meta);
    cost.flops += flops_per_element * static_cast<double>(meta.shape.numel());
  }
  return cost;
}

graph::OpCost InputScaledCost(const OpContext& ctx, const std::vector<graph::TensorMeta>& outputs,
                              double flops_per_element) {
  graph::OpCost cost = ElementwiseCost(ctx, outputs, 0.0);
  cost.flops = flops_per_element * static_cast<double>(ctx.inputs[0].shape.numel());
  return cost;
}

void AddSignature(std::vector<SbpSignature>& signatures, SbpSignature signature) {
  for (const SbpSignature& existing : signatures) {
    if (existing == signature) return;
  }
  signatures.push_back(std::move(signature));
}

std::vector<SbpSignature> BroadcastSplitSignatures(const std::vector<Shape>& inputs,
                                                   const Shape& out, int num_outputs) {
  std::vector<SbpSignature> signatures;
  for (int axis = 0; axis < out.rank(); ++axis) {
    SbpSignature signature;
    for (const Shape& in : inputs) {
      // Input axis aligned with output `axis`; absent or extent-1-broadcast inputs stay whole.
      const int in_axis = in.rank() - out.rank() + axis;
      const bool full = in_axis >= 0 && in[in_axis] == out[axis];
      signature.inputs.push_back(full ? S(in_axis) : B());
    }
    signature.outputs.assign(num_outputs, S(axis));
    AddSignature(signatures, std::move(signature));
  }
  AddSignature(signatures, SbpSignature{std::vector<sbp::Sbp>(inputs.size(), B()),
                                        std::vector<sbp::Sbp>(num_outputs, B())});
  return signatures;
}

graph::TensorId SumToLike(graph::GraphBuilder& builder, graph::TensorId grad,
                          graph::TensorId like) {
  if (builder.meta(grad).shape == builder.meta(like).shape) return grad;
  return builder.Add1("reduce_sum_like", {grad, like});
}

}  // namespace twinflow::ops
