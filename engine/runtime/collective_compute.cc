#include "engine/runtime/collective_compute.h"

#include <string>
#include <utility>

#include "engine/core/collective_kind.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/runtime/host_device.h"

namespace twinflow::runtime {

namespace {

// One step of a collective: src[from] copied into dst[to], or reduced into it. A collective is
// a list of them, in the order they run.
struct Move {
  const Tensor* src = nullptr;
  Region from;
  Tensor* dst = nullptr;
  Region to;
  bool reduce = false;
  // For errors: the members whose tensors these are (src: an output when src_is_output).
  size_t src_member = 0, dst_member = 0;
  bool src_is_output = false;
};

std::string InputName(size_t member) { return "member " + std::to_string(member) + "'s input"; }
std::string OutputName(size_t member) { return "member " + std::to_string(member) + "'s output"; }

Region AxisPart(const Shape& shape, int axis, int64_t parts, int64_t index) {
  Region r = Region::Full(shape);
  r.ranges[axis] = BalancedPart(r.ranges[axis], parts, index);
  return r;
}

// `to`, the whole of `shape` but [offset, offset + size) on `axis`.
Region Slab(const Shape& shape, int axis, int64_t offset, int64_t size) {
  Region r = Region::Full(shape);
  r.ranges[axis] = Range{offset, offset + size};
  return r;
}

class MoveList {
 public:
  explicit MoveList(std::vector<CollectiveTensors>& members) : m_(members) {}

  // All of member j's input into member i's output at `to`.
  void InputInto(size_t j, const Region& from, size_t i, const Region& to, bool reduce) {
    moves_.push_back({&m_[j].input, from, &m_[i].output, to, reduce, j, i, false});
  }
  // Member `first`'s finished output copied whole to every other member's.
  void FirstOutputToOthers(size_t first) {
    const Region all = Region::Full(m_[first].output.shape());
    for (size_t i = 0; i < m_.size(); ++i) {
      if (i == first) continue;
      moves_.push_back({&m_[first].output, all, &m_[i].output, Region::Full(m_[i].output.shape()),
                        false, first, i, true});
    }
  }
  std::vector<Move> Take() { return std::move(moves_); }

 private:
  std::vector<CollectiveTensors>& m_;
  std::vector<Move> moves_;
};

// ShapeError unless every member's tensors have member 0's input's rank and the collective's
// axes and root lie within them (so that the moves can be laid out).
void CheckAxes(const std::string& name, CollectiveKind kind, const plan::CollectiveDesc& desc,
               const std::vector<CollectiveTensors>& m) {
  const Tensor& first = m[0].input;
  const int rank = first.shape().rank();
  for (size_t i = 0; i < m.size(); ++i) {
    for (const Tensor* t : {&m[i].input, &m[i].output}) {
      if (t->shape().rank() != rank) {
        throw ShapeError(name + ": " + (t == &m[i].input ? InputName(i) : OutputName(i)) + " " +
                         DTypeName(t->dtype()) + t->shape().ToString() + " and " + InputName(0) +
                         " " + DTypeName(first.dtype()) + first.shape().ToString() +
                         " differ in rank");
      }
    }
  }
  const auto in_range = [rank](int64_t axis) { return axis >= 0 && axis < rank; };
  const bool gathers = kind == CollectiveKind::kAllGather || kind == CollectiveKind::kAllToAll;
  const bool scatters = kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kAllToAll;
  if ((gathers && !in_range(desc.gather_axis())) || (scatters && !in_range(desc.scatter_axis())) ||
      (kind == CollectiveKind::kBroadcast &&
       (desc.root() < 0 || desc.root() >= static_cast<int64_t>(m.size())))) {
    throw ShapeError(name + ": its axis or root is out of range for " + std::to_string(m.size()) +
                     " members of rank " + std::to_string(rank));
  }
}

// The moves of `kind` over the members: reductions start from member 0's contribution and add
// the others in member order, as the reference collectives (sbp/collective_reference.h) do, so
// the result never depends on which thread arrived last.
std::vector<Move> Moves(CollectiveKind kind, const plan::CollectiveDesc& desc,
                        std::vector<CollectiveTensors>& m) {
  MoveList moves(m);
  const int64_t p = static_cast<int64_t>(m.size());
  const auto full = [](const Tensor& t) { return Region::Full(t.shape()); };
  switch (kind) {
    case CollectiveKind::kAllReduce:
      // In place (CollectiveDesc.in_place) the first move copies member 0's input onto itself,
      // which Run skips; the others' inputs are read before their outputs are written.
      for (size_t j = 0; j < m.size(); ++j) {
        moves.InputInto(j, full(m[j].input), 0, full(m[0].output), j > 0);
      }
      moves.FirstOutputToOthers(0);
      break;
    case CollectiveKind::kAllGather: {
      const int axis = desc.gather_axis();
      int64_t offset = 0;
      for (size_t j = 0; j < m.size(); ++j) {
        const int64_t size = m[j].input.shape()[axis];
        moves.InputInto(j, full(m[j].input), 0, Slab(m[0].output.shape(), axis, offset, size),
                        false);
        offset += size;
      }
      moves.FirstOutputToOthers(0);
      break;
    }
    case CollectiveKind::kReduceScatter:
      for (size_t i = 0; i < m.size(); ++i) {
        for (size_t j = 0; j < m.size(); ++j) {
          moves.InputInto(j, AxisPart(m[j].input.shape(), desc.scatter_axis(), p, i), i,
                          full(m[i].output), j > 0);
        }
      }
      break;
    case CollectiveKind::kAllToAll:
      for (size_t i = 0; i < m.size(); ++i) {
        int64_t offset = 0;
        for (size_t j = 0; j < m.size(); ++j) {
          const Region part = AxisPart(m[j].input.shape(), desc.scatter_axis(), p, i);
          const int64_t size = part.ranges[desc.gather_axis()].size();
          moves.InputInto(j, part, i, Slab(m[i].output.shape(), desc.gather_axis(), offset, size),
                          false);
          offset += size;
        }
      }
      break;
    case CollectiveKind::kBroadcast: {
      const size_t root = static_cast<size_t>(desc.root());
      for (size_t i = 0; i < m.size(); ++i) {
        moves.InputInto(root, full(m[root].input), i, full(m[i].output), false);
      }
      break;
    }
  }
  return moves.Take();
}

// The shape the collective gives member i, from the inputs (as the reference collectives
// shape their results).
Shape ResultShape(CollectiveKind kind, const plan::CollectiveDesc& desc,
                  const std::vector<CollectiveTensors>& m, size_t i) {
  const int64_t p = static_cast<int64_t>(m.size());
  Shape shape = m[0].input.shape();
  switch (kind) {
    case CollectiveKind::kAllReduce:
      break;
    case CollectiveKind::kBroadcast:
      shape = m[static_cast<size_t>(desc.root())].input.shape();
      break;
    case CollectiveKind::kAllGather:
      shape[desc.gather_axis()] = 0;
      for (const CollectiveTensors& member : m) {
        shape[desc.gather_axis()] += member.input.shape()[desc.gather_axis()];
      }
      break;
    case CollectiveKind::kReduceScatter:
      shape = AxisPart(shape, desc.scatter_axis(), p, static_cast<int64_t>(i)).shape();
      break;
    case CollectiveKind::kAllToAll:
      shape = AxisPart(shape, desc.scatter_axis(), p, static_cast<int64_t>(i)).shape();
      shape[desc.gather_axis()] = 0;
      for (const CollectiveTensors& member : m) {
        shape[desc.gather_axis()] +=
            AxisPart(member.input.shape(), desc.scatter_axis(), p, static_cast<int64_t>(i))
                .ranges[desc.gather_axis()]
                .size();
      }
      break;
  }
  return shape;
}

// ShapeError naming the collective, the member and its tensors unless each output has the shape
// the collective gives it and every move fits (the inputs agree where they must).
void CheckMoves(const std::string& name, CollectiveKind kind, const plan::CollectiveDesc& desc,
                const std::vector<Move>& moves, const std::vector<CollectiveTensors>& members) {
  for (size_t i = 0; i < members.size(); ++i) {
    const Tensor& out = members[i].output;
    const Shape result = ResultShape(kind, desc, members, i);
    if (out.shape() != result) {
      throw ShapeError(name + " gives " + OutputName(i) + " " + result.ToString() +
                       " but its register holds " + DTypeName(out.dtype()) +
                       out.shape().ToString());
    }
  }
  for (const Move& mv : moves) {
    const Shape& s = mv.src->shape();
    const Shape& d = mv.dst->shape();
    const bool fits = mv.src->dtype() == mv.dst->dtype() && mv.from.shape() == mv.to.shape() &&
                      Region::Full(s).Contains(mv.from) && Region::Full(d).Contains(mv.to);
    if (!fits) {
      const std::string src = (mv.src_is_output ? OutputName : InputName)(mv.src_member);
      throw ShapeError(name + ": " + src + " " + DTypeName(mv.src->dtype()) + s.ToString() +
                       " does not fit " + OutputName(mv.dst_member) + " " +
                       DTypeName(mv.dst->dtype()) + d.ToString());
    }
  }
}

bool Reaches(Device& device, const std::vector<CollectiveTensors>& members) {
  for (const CollectiveTensors& m : members) {
    if (!device.Reaches(m.input) || !device.Reaches(m.output)) return false;
  }
  return true;
}

// One move on `device`: whole tensors as plain copies and reductions, boxes as region ones.
void Run(Device& device, const Move& mv, ReduceOp op) {
  const bool whole =
      mv.from == Region::Full(mv.src->shape()) && mv.to == Region::Full(mv.dst->shape());
  if (whole && !mv.reduce && mv.src->raw() == mv.dst->raw()) return;  // in place already
  if (whole && mv.reduce) {
    device.ReduceInto(*mv.src, *mv.dst, op);
  } else if (whole) {
    device.Copy(*mv.src, *mv.dst);
  } else if (mv.reduce) {
    device.ReduceRegion(*mv.src, mv.from, *mv.dst, mv.to, op);
  } else {
    device.CopyRegion(*mv.src, mv.from, *mv.dst, mv.to);
  }
}

// One tensor of the collective: each member's k-th.
void ComputeTensor(Device& device, CollectiveKind kind, const plan::CollectiveDesc& desc,
                   ReduceOp op, std::vector<CollectiveTensors>& members) {
  const std::string name = CollectiveKindName(kind);
  CheckAxes(name, kind, desc, members);
  const std::vector<Move> moves = Moves(kind, desc, members);
  CheckMoves(name, kind, desc, moves, members);
  if (Reaches(device, members)) {
    for (const Move& mv : moves) Run(device, mv, op);
    return;
  }
  // A member's memory out of the device's reach (GPUs without peer access): the same moves on
  // host copies, the outputs uploaded back.
  std::vector<CollectiveTensors> host;
  for (const CollectiveTensors& m : members) {  // (copying m's views would read device memory)
    host.push_back({device.Download(m.input), Tensor(m.output.shape(), m.output.dtype())});
  }
  HostDevice on_host(0);
  for (const Move& mv : Moves(kind, desc, host)) Run(on_host, mv, op);
  for (size_t i = 0; i < members.size(); ++i) device.Upload(host[i].output, members[i].output);
}

}  // namespace

void ComputeCollective(Device& device, const plan::CollectiveDesc& desc, ReduceOp op,
                       std::vector<CollectiveMember>& members) {
  const CollectiveKind kind = plan::FromProto(desc.kind(), "collective");
  const std::string name = CollectiveKindName(kind);
  if (members.empty()) throw ShapeError(name + ": the group has no members");
  const size_t tensors = members[0].tensors.size();
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].tensors.size() != tensors || tensors == 0 ||
        (tensors > 1 && kind != CollectiveKind::kAllReduce)) {
      throw ShapeError(name + ": member " + std::to_string(i) + " brings " +
                       std::to_string(members[i].tensors.size()) + " tensors and member 0 " +
                       std::to_string(tensors) + " (several only in an all_reduce bucket)");
    }
  }
  for (size_t k = 0; k < tensors; ++k) {
    std::vector<CollectiveTensors> views;
    for (const CollectiveMember& m : members)
      views.push_back({m.tensors[k].input.AsView(), m.tensors[k].output.AsView()});
    ComputeTensor(device, kind, desc, op, views);
  }
}

}  // namespace twinflow::runtime
