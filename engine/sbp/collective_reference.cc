#include "engine/sbp/collective_reference.h"

#include <string>

#include "engine/core/collective_kind.h"
#include "engine/core/error.h"

namespace twinflow::sbp {
namespace {

std::string Describe(const Tensor& t) { return DTypeName(t.dtype()) + t.shape().ToString(); }

// Shared input checks: a non-empty group of one dtype and one rank.
void CheckGroup(const std::vector<Tensor>& buffers, CollectiveKind kind) {
  const char* what = CollectiveKindName(kind);
  if (buffers.empty()) throw ShapeError(std::string(what) + ": the group has no members");
  for (size_t i = 1; i < buffers.size(); ++i) {
    if (buffers[i].dtype() != buffers[0].dtype()) {
      throw ShapeError(std::string(what) + ": member " + std::to_string(i) + " holds " +
                       Describe(buffers[i]) + " but member 0 holds " + Describe(buffers[0]) +
                       " (dtypes differ)");
    }
    if (buffers[i].shape().rank() != buffers[0].shape().rank()) {
      throw ShapeError(std::string(what) + ": member " + std::to_string(i) + " holds " +
                       Describe(buffers[i]) + " but member 0 holds " + Describe(buffers[0]) +
                       " (ranks differ)");
    }
  }
}

void CheckAxis(const Tensor& t, int axis, CollectiveKind kind, const char* axis_name) {
  const char* what = CollectiveKindName(kind);
  if (axis < 0 || axis >= t.shape().rank()) {
    throw ShapeError(std::string(what) + ": " + axis_name + " " + std::to_string(axis) +
                     " is out of range for " + Describe(t));
  }
}

// Every member's extents agree with member 0's, except on `free_axis` (-1: on every axis).
void CheckExtents(const std::vector<Tensor>& buffers, int free_axis, CollectiveKind kind) {
  const char* what = CollectiveKindName(kind);
  const Shape& first = buffers[0].shape();
  for (size_t i = 1; i < buffers.size(); ++i) {
    const Shape& s = buffers[i].shape();
    for (int d = 0; d < s.rank(); ++d) {
      if (d != free_axis && s[d] != first[d]) {
        throw ShapeError(std::string(what) + ": member " + std::to_string(i) + " holds " +
                         Describe(buffers[i]) + " but member 0 holds " + Describe(buffers[0]) +
                         " (axis " + std::to_string(d) + " differs)");
      }
    }
  }
}

// Deterministic: member 0 first, then the others in member order.
Tensor Reduce(const std::vector<Tensor>& buffers, ReduceOp op) {
  Tensor acc = buffers[0];
  for (size_t i = 1; i < buffers.size(); ++i) acc.ReduceFrom(buffers[i], op);
  return acc;
}

Region AxisPart(const Shape& shape, int axis, int64_t parts, int64_t index) {
  Region r = Region::Full(shape);
  r.ranges[axis] = BalancedPart(r.ranges[axis], parts, index);
  return r;
}

// Concatenates pieces along `axis` (their other extents already agree).
Tensor Concat(const std::vector<Tensor>& pieces, int axis) {
  Shape out_shape = pieces[0].shape();
  out_shape[axis] = 0;
  for (const Tensor& p : pieces) out_shape[axis] += p.shape()[axis];
  Tensor out(out_shape, pieces[0].dtype());
  int64_t offset = 0;
  for (const Tensor& p : pieces) {
    Region dst = Region::Full(out_shape);
    dst.ranges[axis] = Range{offset, offset + p.shape()[axis]};
    out.CopyRegionFrom(p, Region::Full(p.shape()), dst);
    offset += p.shape()[axis];
  }
  return out;
}

}  // namespace

std::vector<Tensor> AllGather(const std::vector<Tensor>& buffers, int axis) {
  CheckGroup(buffers, CollectiveKind::kAllGather);
  CheckAxis(buffers[0], axis, CollectiveKind::kAllGather, "axis");
  CheckExtents(buffers, axis, CollectiveKind::kAllGather);
  const Tensor gathered = Concat(buffers, axis);
  return std::vector<Tensor>(buffers.size(), gathered);
}

std::vector<Tensor> AllReduce(const std::vector<Tensor>& buffers, ReduceOp op) {
  CheckGroup(buffers, CollectiveKind::kAllReduce);
  CheckExtents(buffers, -1, CollectiveKind::kAllReduce);
  const Tensor reduced = Reduce(buffers, op);
  return std::vector<Tensor>(buffers.size(), reduced);
}

std::vector<Tensor> ReduceScatter(const std::vector<Tensor>& buffers, ReduceOp op, int axis) {
  CheckGroup(buffers, CollectiveKind::kReduceScatter);
  CheckAxis(buffers[0], axis, CollectiveKind::kReduceScatter, "axis");
  CheckExtents(buffers, -1, CollectiveKind::kReduceScatter);
  const Tensor reduced = Reduce(buffers, op);
  const int64_t p = static_cast<int64_t>(buffers.size());
  std::vector<Tensor> out;
  out.reserve(buffers.size());
  for (int64_t i = 0; i < p; ++i)
    out.push_back(reduced.Slice(AxisPart(reduced.shape(), axis, p, i)));
  return out;
}

std::vector<Tensor> AllToAll(const std::vector<Tensor>& buffers, int scatter_axis,
                             int gather_axis) {
  CheckGroup(buffers, CollectiveKind::kAllToAll);
  CheckAxis(buffers[0], scatter_axis, CollectiveKind::kAllToAll, "scatter axis");
  CheckAxis(buffers[0], gather_axis, CollectiveKind::kAllToAll, "gather axis");
  // Members may differ on the gather axis: that is how an uneven split arrives (pieces of 3,2,2
  // rows); every other extent must agree so that the received pieces line up.
  CheckExtents(buffers, gather_axis, CollectiveKind::kAllToAll);
  const int64_t p = static_cast<int64_t>(buffers.size());
  std::vector<Tensor> out;
  out.reserve(buffers.size());
  for (int64_t i = 0; i < p; ++i) {
    std::vector<Tensor> received;
    received.reserve(buffers.size());
    for (const Tensor& b : buffers) {
      received.push_back(b.Slice(AxisPart(b.shape(), scatter_axis, p, i)));
    }
    out.push_back(Concat(received, gather_axis));
  }
  return out;
}

}  // namespace twinflow::sbp
