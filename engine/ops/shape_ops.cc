// The shape op family: reshape, transpose, slice (and its gradient slice_grad) and concat.
// They move data without arithmetic, so besides splits on the axes they keep, every one of
// them passes partial sums and broadcasts through unchanged.
#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/region.h"
#include "engine/graph/graph_builder.h"
#include "engine/ops/op_families.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

using graph::OpCost;

std::string Ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// The same Sbp on every input and output.
SbpSignature Uniform(size_t inputs, size_t outputs, Sbp in, Sbp out) {
  return SbpSignature{std::vector<Sbp>(inputs, in), std::vector<Sbp>(outputs, out)};
}

void AddPassThrough(std::vector<SbpSignature>& sigs, size_t inputs) {
  sigs.push_back(Uniform(inputs, 1, Sbp::Partial(), Sbp::Partial()));
  sigs.push_back(Uniform(inputs, 1, Sbp::Broadcast(), Sbp::Broadcast()));
}

OpCost CopyCost(const OpContext& ctx, const std::vector<TensorMeta>& outputs) {
  OpCost cost;
  for (const TensorMeta& m : ctx.inputs) cost.bytes_read += m.shape.numel() * DTypeSize(m.dtype);
  for (const TensorMeta& m : outputs) cost.bytes_written += m.shape.numel() * DTypeSize(m.dtype);
  return cost;
}

// ---- reshape ----------------------------------------------------------------------------

Shape ReshapeTarget(const OpContext& ctx) {
  const std::vector<int64_t>& spec = ctx.attrs.GetInts("shape");
  const Shape& in = ctx.inputs[0].shape;
  std::vector<int64_t> dims = spec;
  int infer_axis = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && infer_axis < 0) {
      infer_axis = static_cast<int>(i);
    } else if (dims[i] < 0) {
      throw InvalidArgumentError("op 'reshape': bad target shape " + Ints(spec) +
                                 " (at most one -1, other extents non-negative)");
    } else {
      known *= dims[i];
    }
  }
  if (infer_axis >= 0) {
    if (known == 0 || in.numel() % known != 0) {
      throw ShapeError("op 'reshape': cannot infer the -1 in " + Ints(spec) + " for input " +
                       in.ToString());
    }
    dims[infer_axis] = in.numel() / known;
    known *= dims[infer_axis];
  }
  if (known != in.numel()) {
    throw ShapeError("op 'reshape': input " + in.ToString() + " has " + std::to_string(in.numel()) +
                     " elements, target " + Ints(spec) + " has " + std::to_string(known));
  }
  return Shape(dims);
}

std::vector<TensorMeta> InferReshape(const OpContext& ctx) {
  CheckInputCount(ctx, 1);
  return {TensorMeta{ReshapeTarget(ctx), ctx.inputs[0].dtype}};
}

int64_t SuffixProduct(const Shape& s, int from) {
  int64_t p = 1;
  for (int i = from; i < s.rank(); ++i) p *= s[i];
  return p;
}

// Splitting input axis a and output axis b into `parts` gives every device the same run of
// row-major elements (so a plain copy reshapes the physical slice) when both axes head blocks
// of equal size and every part boundary of a, times its inner size, equals that of b.
bool SplitsAgree(const Shape& in, int a, const Shape& out, int b, int64_t parts) {
  const int64_t block = SuffixProduct(in, a);
  if (block <= 0 || block != SuffixProduct(out, b)) return false;
  const int64_t inner_in = block / in[a];
  const int64_t inner_out = block / out[b];
  for (int64_t i = 0; i < parts; ++i) {
    Range ra = BalancedPart(Range{0, in[a]}, parts, i);
    Range rb = BalancedPart(Range{0, out[b]}, parts, i);
    if (ra.begin * inner_in != rb.begin * inner_out || ra.end * inner_in != rb.end * inner_out) {
      return false;
    }
  }
  return true;
}

// The granule of axis `axis` of `shape` against the reshape's other side `other`: parts of the
// axis must be whole multiples of it so that their boundaries fall, in elements, on common
// multiples of both sides' inner sizes (lcm), which is where the two sides can cut alike. The
// partner axis heads a block of the same size; extent-1 partners cannot be split and are
// skipped. Merging [heads, d] into [heads * d] gives the merged axis a granule of d.
int64_t ReshapeGranuleOf(const Shape& shape, int axis, const Shape& other) {
  const int64_t block = SuffixProduct(shape, axis);
  for (int b = 0; b < other.rank(); ++b) {
    if (other[b] <= 1 || SuffixProduct(other, b) != block || block <= 0) continue;
    const int64_t inner = block / shape[axis], other_inner = block / other[b];
    return std::lcm(inner, other_inner) / inner;
  }
  return 1;
}

int64_t ReshapeGranule(const OpContext& ctx, int tensor, int axis) {
  const Shape& in = ctx.inputs[0].shape;
  const Shape out = ReshapeTarget(ctx);
  return tensor == 0 ? ReshapeGranuleOf(in, axis, out) : ReshapeGranuleOf(out, axis, in);
}

std::vector<SbpSignature> ReshapeSignaturesOf(const Shape& in, const Shape& out, int64_t parts) {
  std::vector<SbpSignature> sigs;
  for (int a = 0; a < in.rank(); ++a) {
    for (int b = 0; b < out.rank(); ++b) {
      // One mesh axis; ReshapeGranule keeps nested splits of several aligned too.
      if (SplitsAgree(in, a, out, b, parts)) {
        sigs.push_back(SbpSignature{{Sbp::Split(a)}, {Sbp::Split(b)}});
      }
    }
  }
  AddPassThrough(sigs, 1);
  return sigs;
}

std::vector<SbpSignature> ReshapeSignatures(const OpContext& ctx, int64_t parts) {
  return ReshapeSignaturesOf(ctx.inputs[0].shape, ReshapeTarget(ctx), parts);
}

// Nested splits: the same rule on the physical shapes the earlier mesh axes leave.
std::vector<SbpSignature> ReshapeLocalSignatures(const std::vector<Shape>& inputs,
                                                 const std::vector<Shape>& outputs, int64_t parts) {
  return ReshapeSignaturesOf(inputs.at(0), outputs.at(0), parts);
}

Grads ReshapeGradient(GraphBuilder& b, const OpNode& op, const Grads& dy) {
  if (!dy[0]) return {std::nullopt};
  const Shape& in = b.meta(op.inputs[0]).shape;
  return {b.Add1("reshape", {*dy[0]}, Attrs{{"shape", in.dims()}}, op.name + "/grad")};
}

// ---- transpose --------------------------------------------------------------------------

std::vector<int64_t> CheckedPerm(const OpContext& ctx) {
  const std::vector<int64_t>& perm = ctx.attrs.GetInts("perm");
  const int rank = ctx.inputs[0].shape.rank();
  std::vector<bool> seen(rank, false);
  bool ok = static_cast<int>(perm.size()) == rank;
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && perm[i] < rank && !seen[perm[i]];
    if (ok) seen[perm[i]] = true;
  }
  if (!ok) {
    throw InvalidArgumentError("op 'transpose': perm " + Ints(perm) +
                               " is not a permutation of the input's " + std::to_string(rank) +
                               " axes");
  }
  return perm;
}

std::vector<TensorMeta> InferTranspose(const OpContext& ctx) {
  CheckInputCount(ctx, 1);
  const std::vector<int64_t> perm = CheckedPerm(ctx);
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(ctx.inputs[0].shape[static_cast<int>(p)]);
  return {TensorMeta{Shape(dims), ctx.inputs[0].dtype}};
}

std::vector<SbpSignature> TransposeSignatures(const OpContext& ctx, int64_t) {
  const std::vector<int64_t> perm = CheckedPerm(ctx);
  std::vector<SbpSignature> sigs;
  for (int k = 0; k < static_cast<int>(perm.size()); ++k) {
    for (int j = 0; j < static_cast<int>(perm.size()); ++j) {
      if (perm[j] == k) sigs.push_back(SbpSignature{{Sbp::Split(k)}, {Sbp::Split(j)}});
    }
  }
  AddPassThrough(sigs, 1);
  return sigs;
}

Grads TransposeGradient(GraphBuilder& b, const OpNode& op, const Grads& dy) {
  if (!dy[0]) return {std::nullopt};
  const std::vector<int64_t>& perm = op.attrs.GetInts("perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return {b.Add1("transpose", {*dy[0]}, Attrs{{"perm", inverse}}, op.name + "/grad")};
}

// ---- slice and slice_grad ---------------------------------------------------------------

// Checks begin/end against `full` (the sliced tensor's shape) and returns the slice's shape.
Shape SliceShape(const std::string& type, const Attrs& attrs, const Shape& full) {
  const std::vector<int64_t>& begin = attrs.GetInts("begin");
  const std::vector<int64_t>& end = attrs.GetInts("end");
  if (static_cast<int>(begin.size()) != full.rank() ||
      static_cast<int>(end.size()) != full.rank()) {
    throw InvalidArgumentError("op '" + type + "': begin " + Ints(begin) + " and end " + Ints(end) +
                               " need one entry per axis of " + full.ToString());
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < full.rank(); ++i) {
    if (begin[i] < 0 || begin[i] > end[i] || end[i] > full[i]) {
      throw ShapeError("op '" + type + "': range [" + std::to_string(begin[i]) + ":" +
                       std::to_string(end[i]) + "] is out of bounds for axis " + std::to_string(i) +
                       " of " + full.ToString());
    }
    dims.push_back(end[i] - begin[i]);
  }
  return Shape(dims);
}

std::vector<TensorMeta> InferSlice(const OpContext& ctx) {
  CheckInputCount(ctx, 1);
  return {TensorMeta{SliceShape(ctx.type, ctx.attrs, ctx.inputs[0].shape), ctx.inputs[0].dtype}};
}

std::vector<TensorMeta> InferSliceGrad(const OpContext& ctx) {
  CheckInputCount(ctx, 1);
  const Shape full(ctx.attrs.GetInts("shape"));
  const Shape expected = SliceShape(ctx.type, ctx.attrs, full);
  if (ctx.inputs[0].shape != expected) {
    throw ShapeError("op 'slice_grad': dy is " + ctx.inputs[0].shape.ToString() +
                     " but the slice of " + full.ToString() + " is " + expected.ToString());
  }
  return {TensorMeta{full, ctx.inputs[0].dtype}};
}

// Splits are valid on the axes the slice keeps whole; `full` is the unsliced shape.
std::vector<SbpSignature> SliceLikeSignatures(const Attrs& attrs, const Shape& full) {
  const std::vector<int64_t>& begin = attrs.GetInts("begin");
  const std::vector<int64_t>& end = attrs.GetInts("end");
  std::vector<SbpSignature> sigs;
  for (int k = 0; k < full.rank(); ++k) {
    if (begin[k] == 0 && end[k] == full[k])
      sigs.push_back(Uniform(1, 1, Sbp::Split(k), Sbp::Split(k)));
  }
  AddPassThrough(sigs, 1);
  return sigs;
}

Attrs SliceAttrs(const Attrs& attrs) {
  return Attrs{{"begin", attrs.GetInts("begin")}, {"end", attrs.GetInts("end")}};
}

Grads SliceGradient(GraphBuilder& b, const OpNode& op, const Grads& dy) {
  if (!dy[0]) return {std::nullopt};
  Attrs attrs = SliceAttrs(op.attrs);
  attrs.Set("shape", b.meta(op.inputs[0]).shape.dims());
  return {b.Add1("slice_grad", {*dy[0]}, attrs, op.name + "/grad")};
}

Grads SliceGradGradient(GraphBuilder& b, const OpNode& op, const Grads& dy) {
  if (!dy[0]) return {std::nullopt};
  return {b.Add1("slice", {*dy[0]}, SliceAttrs(op.attrs), op.name + "/grad")};
}

// ---- concat -----------------------------------------------------------------------------

int ConcatAxis(const OpContext& ctx) {
  const int64_t axis = ctx.attrs.GetInt("axis");
  const int rank = ctx.inputs.empty() ? 0 : ctx.inputs[0].shape.rank();
  if (axis < 0 || axis >= rank) {
    throw InvalidArgumentError("op 'concat': axis " + std::to_string(axis) +
                               " is out of range for rank " + std::to_string(rank));
  }
  return static_cast<int>(axis);
}

std::vector<TensorMeta> InferConcat(const OpContext& ctx) {
  if (ctx.inputs.empty()) throw InvalidArgumentError("op 'concat' needs at least one input");
  const int axis = ConcatAxis(ctx);
  const TensorMeta& first = ctx.inputs[0];
  std::vector<int64_t> dims = first.shape.dims();
  dims[axis] = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const TensorMeta& m = ctx.inputs[i];
    bool ok = m.dtype == first.dtype && m.shape.rank() == first.shape.rank();
    for (int d = 0; ok && d < m.shape.rank(); ++d) ok = d == axis || m.shape[d] == first.shape[d];
    if (!ok) {
      throw ShapeError("op 'concat': input " + std::to_string(i) + " " + m.ToString() +
                       " does not match input 0 " + first.ToString() + " off axis " +
                       std::to_string(axis));
    }
    dims[axis] += m.shape[axis];
  }
  return {TensorMeta{Shape(dims), first.dtype}};
}

std::vector<SbpSignature> ConcatSignatures(const OpContext& ctx, int64_t) {
  const int axis = ConcatAxis(ctx);
  const size_t n = ctx.inputs.size();
  std::vector<SbpSignature> sigs;
  for (int k = 0; k < ctx.inputs[0].shape.rank(); ++k) {
    if (k != axis) sigs.push_back(Uniform(n, 1, Sbp::Split(k), Sbp::Split(k)));
  }
  AddPassThrough(sigs, n);
  return sigs;
}

Grads ConcatGradient(GraphBuilder& b, const OpNode& op, const Grads& dy) {
  Grads grads(op.inputs.size());
  if (!dy[0]) return grads;
  const int axis = static_cast<int>(op.attrs.GetInt("axis"));
  const Shape& out = b.meta(op.outputs[0]).shape;
  int64_t offset = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Shape& in = b.meta(op.inputs[i]).shape;
    std::vector<int64_t> begin(out.rank(), 0);
    std::vector<int64_t> end = out.dims();
    begin[axis] = offset;
    end[axis] = offset + in[axis];
    offset = end[axis];
    grads[i] = b.Add1("slice", {*dy[0]}, Attrs{{"begin", begin}, {"end", end}},
                      op.name + "/grad" + std::to_string(i));
  }
  return grads;
}

}  // namespace

void RegisterShapeOps(graph::OpRegistry& registry) {
  auto copy_cost = [](auto infer) {
    return [infer](const OpContext& ctx) { return CopyCost(ctx, infer(ctx)); };
  };
  OpDef reshape{"reshape",      1, 1, 1, InferReshape, ReshapeSignatures, copy_cost(InferReshape),
                ReshapeGradient};
  reshape.split_granule = ReshapeGranule;
  reshape.local_signatures = ReshapeLocalSignatures;
  registry.Register(std::move(reshape));
  registry.Register(OpDef{"transpose", 1, 1, 1, InferTranspose, TransposeSignatures,
                          copy_cost(InferTranspose), TransposeGradient});
  registry.Register(OpDef{"slice", 1, 1, 1, InferSlice,
                          [](const OpContext& ctx, int64_t) {
                            return SliceLikeSignatures(ctx.attrs, ctx.inputs[0].shape);
                          },
                          copy_cost(InferSlice), SliceGradient});
  registry.Register(OpDef{"slice_grad", 1, 1, 1, InferSliceGrad,
                          [](const OpContext& ctx, int64_t) {
                            return SliceLikeSignatures(ctx.attrs,
                                                       Shape(ctx.attrs.GetInts("shape")));
                          },
                          copy_cost(InferSliceGrad), SliceGradGradient});
  registry.Register(OpDef{"concat", 1, -1, 1, InferConcat, ConcatSignatures, copy_cost(InferConcat),
                          ConcatGradient});
}

}  // namespace twinflow::ops
