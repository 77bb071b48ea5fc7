#pragma once
// Helpers shared by the op family files: the graph names they use, errors and input checks
// that name the op, axis normalisation, numpy broadcasting, signature building, the usual cost
// shapes and gradient plumbing.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/graph/graph_builder.h"
#include "engine/graph/op_def.h"
#include "engine/sbp/sbp.h"

namespace twinflow::ops {

// The graph names every op family file uses. This header is private to engine/ops (only the op
// family files include it), so importing them here leaks into no public API.
using graph::GraphBuilder;
using graph::OpContext;
using graph::OpDef;
using graph::OpNode;
using graph::SbpSignature;
using graph::TensorId;
using graph::TensorMeta;
using sbp::Sbp;
// What an OpDef's gradient function takes (one per output) and returns (one per input).
using Grads = std::vector<std::optional<TensorId>>;

// Errors whose message starts with the op type: "matmul: ...".
[[noreturn]] void ThrowShape(const graph::OpContext& ctx, const std::string& problem);
[[noreturn]] void ThrowInvalid(const graph::OpContext& ctx, const std::string& problem);

// The checks below name input `index` by `role` ("logits", "dy") in their messages, or as
// "input <index>" when no role is given.

// Throws InvalidArgumentError unless the op has exactly `count` inputs.
void CheckInputCount(const graph::OpContext& ctx, int count);
// Throws ShapeError unless input `index` has rank `rank` (at least `rank` for CheckMinRank).
void CheckRank(const graph::OpContext& ctx, int index, int rank, const std::string& role = "");
void CheckMinRank(const graph::OpContext& ctx, int index, int rank, const std::string& role = "");
// Throws ShapeError unless input `index` has shape `expected`.
void CheckShapeEq(const graph::OpContext& ctx, int index, const Shape& expected,
                  const std::string& role = "");
// Throws InvalidArgumentError unless every input has the dtype of input 0.
void CheckSameDType(const graph::OpContext& ctx);
// Throws InvalidArgumentError unless inputs `a` and `b` have the same dtype.
void CheckSameDType(const graph::OpContext& ctx, int a, int b);
// Throws InvalidArgumentError unless input `index` is a float: f32, f64, bf16 or f16 (the
// 16-bit ones compute in f32 between load and store).
void CheckFloat(const graph::OpContext& ctx, int index, const std::string& role = "");
// Throws InvalidArgumentError unless input `index` is f32 or f64: optimizer updates keep fp32
// master weights and state.
void CheckWideFloat(const graph::OpContext& ctx, int index, const std::string& role = "");
// Throws ShapeError unless input `index` is an f32 scalar: f32[] or f32[1] (a step counter, a
// gradient factor, a loss scale). `what` names it.
void CheckF32Scalar(const graph::OpContext& ctx, int index, const std::string& what);
// Throws InvalidArgumentError unless input `index` is i32 or i64 (ids, labels).
void CheckIndex(const graph::OpContext& ctx, int index, const std::string& role = "");

// Maps axis in [-rank, rank) to [0, rank); InvalidArgumentError naming `attr` otherwise.
int NormalizeAxis(const graph::OpContext& ctx, int64_t axis, int rank,
                  const std::string& attr = "axis");

// BroadcastShapes (engine/core/shape.h) with a ShapeError naming the op when shapes clash.
Shape InferBroadcast(const graph::OpContext& ctx, const Shape& a, const Shape& b);
// True when `small` broadcasts to exactly `big` (what a gradient must be summed back from).
bool BroadcastsTo(const Shape& small, const Shape& big);
// `shape` without its last axis ("[N,C]" -> "[N]"), and with an extra last axis of `extent`.
Shape DropLast(const Shape& shape);
Shape WithLast(const Shape& shape, int64_t extent);

int64_t Bytes(const graph::TensorMeta& meta);
int64_t InputBytes(const graph::OpContext& ctx);
// Reads every input once, writes every output once, `flops_per_element` per output element.
graph::OpCost ElementwiseCost(const graph::OpContext& ctx,
                              const std::vector<graph::TensorMeta>& outputs,
                              double flops_per_element);
// Like ElementwiseCost, but `flops_per_element` per element of input 0: for ops whose work
// follows what they read (reductions, row-wise ops with extra or smaller outputs).
graph::OpCost InputScaledCost(const graph::OpContext& ctx,
                              const std::vector<graph::TensorMeta>& outputs,
                              double flops_per_element);

inline sbp::Sbp S(int axis) { return sbp::Sbp::Split(axis); }
inline sbp::Sbp B() { return sbp::Sbp::Broadcast(); }
inline sbp::Sbp P(ReduceOp op = ReduceOp::kSum) { return sbp::Sbp::Partial(op); }
inline graph::SbpSignature Sig(std::vector<sbp::Sbp> inputs, std::vector<sbp::Sbp> outputs) {
  return graph::SbpSignature{std::move(inputs), std::move(outputs)};
}

// Appends `signature` unless an equal one is already listed (keeps the order stable).
void AddSignature(std::vector<graph::SbpSignature>& signatures, graph::SbpSignature signature);

// Signatures of an op whose inputs broadcast (numpy-style) to `out`, every output having the
// shape `out`: for each output axis, that axis split on every output and on each input that
// holds it at full extent, B on inputs that broadcast it; then all B -> all B.
std::vector<graph::SbpSignature> BroadcastSplitSignatures(const std::vector<Shape>& inputs,
                                                          const Shape& out, int num_outputs = 1);

// The gradient `grad` (shaped like the broadcast result) summed back to the shape of `like`
// with reduce_sum_like; `grad` itself when the shapes already agree.
graph::TensorId SumToLike(graph::GraphBuilder& builder, graph::TensorId grad, graph::TensorId like);

}  // namespace twinflow::ops
