#pragma once
// Small helpers shared by the reduction, softmax, normalization and embedding op families
// (hence "rsne"): SBP shorthands, input checks whose messages name the op, axis handling and
// byte counts for costs.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/graph/op_def.h"

namespace twinflow::ops::rsne {

using graph::OpContext;
using graph::SbpSignature;
using graph::TensorMeta;
using sbp::Sbp;

inline Sbp S(int axis) { return Sbp::Split(axis); }
inline Sbp B() { return Sbp::Broadcast(); }
inline Sbp P() { return Sbp::Partial(ReduceOp::kSum); }
inline Sbp PMax() { return Sbp::Partial(ReduceOp::kMax); }

inline SbpSignature Sig(std::vector<Sbp> inputs, std::vector<Sbp> outputs) {
  return SbpSignature{std::move(inputs), std::move(outputs)};
}

[[noreturn]] inline void ThrowShape(const OpContext& ctx, const std::string& what) {
  throw ShapeError(ctx.type + ": " + what);
}
[[noreturn]] inline void ThrowArg(const OpContext& ctx, const std::string& what) {
  throw InvalidArgumentError(ctx.type + ": " + what);
}

inline void CheckInputCount(const OpContext& ctx, int count) {
  if (static_cast<int>(ctx.inputs.size()) != count) {
    ThrowArg(ctx, "expects " + std::to_string(count) + " inputs, got " +
                      std::to_string(ctx.inputs.size()));
  }
}

// Computable floating types: f32 and f64 (bf16/f16 are storage only).
inline void CheckFloat(const OpContext& ctx, int input, const char* role) {
  const DType dtype = ctx.inputs[input].dtype;
  if (dtype != DType::kF32 && dtype != DType::kF64) {
    ThrowArg(ctx, std::string(role) + " must be f32 or f64, got " + DTypeName(dtype));
  }
}

inline void CheckIndex(const OpContext& ctx, int input, const char* role) {
  const DType dtype = ctx.inputs[input].dtype;
  if (dtype != DType::kI32 && dtype != DType::kI64) {
    ThrowArg(ctx, std::string(role) + " must be i32 or i64, got " + DTypeName(dtype));
  }
}

inline void CheckSameDType(const OpContext& ctx, int a, int b) {
  if (ctx.inputs[a].dtype != ctx.inputs[b].dtype) {
    ThrowArg(ctx, "inputs " + std::to_string(a) + " and " + std::to_string(b) +
                      " have different dtypes: " + ctx.inputs[a].ToString() + " vs " +
                      ctx.inputs[b].ToString());
  }
}

inline void CheckShapeEq(const OpContext& ctx, int input, const Shape& expected, const char* role) {
  if (ctx.inputs[input].shape != expected) {
    ThrowShape(ctx, std::string(role) + " must have shape " + expected.ToString() + ", got " +
                        ctx.inputs[input].shape.ToString());
  }
}

inline void CheckMinRank(const OpContext& ctx, int input, int rank, const char* role) {
  if (ctx.inputs[input].shape.rank() < rank) {
    ThrowShape(ctx, std::string(role) + " must have rank >= " + std::to_string(rank) + ", got " +
                        ctx.inputs[input].shape.ToString());
  }
}

// `axis` in [-rank, rank) -> [0, rank); InvalidArgumentError naming the attribute otherwise.
inline int NormalizeAxis(const OpContext& ctx, int64_t axis, int rank, const char* attr) {
  if (axis < -rank || axis >= rank) {
    ThrowArg(ctx, std::string("attribute '") + attr + "' = " + std::to_string(axis) +
                      " is out of range for rank " + std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// Shape without the last axis ("[N,C]" -> "[N]").
inline Shape DropLast(const Shape& shape) {
  std::vector<int64_t> dims = shape.dims();
  if (!dims.empty()) dims.pop_back();
  return Shape(dims);
}

inline int64_t Bytes(const TensorMeta& meta) { return meta.shape.numel() * DTypeSize(meta.dtype); }

inline int64_t BytesOf(const std::vector<TensorMeta>& metas) {
  int64_t total = 0;
  for (const TensorMeta& meta : metas) total += Bytes(meta);
  return total;
}

// A cost that reads every input and writes `outputs`, at `flops_per_element` of input 0.
inline graph::OpCost ElementwiseCost(const OpContext& ctx, const std::vector<TensorMeta>& outputs,
                                     double flops_per_element) {
  graph::OpCost cost;
  cost.flops = flops_per_element * static_cast<double>(ctx.inputs[0].shape.numel());
  cost.bytes_read = BytesOf(ctx.inputs);
  cost.bytes_written = BytesOf(outputs);
  return cost;
}

}  // namespace twinflow::ops::rsne
