#include "engine/runtime/collective_compute.h"

#include <algorithm>
#include <string>
#include <utility>

#include "engine/core/collective_kind.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/sbp/collective_reference.h"

namespace twinflow::runtime {

void ComputeCollective(const plan::CollectiveDesc& desc, ReduceOp op,
                       std::vector<CollectiveMember>& members) {
  const CollectiveKind kind = plan::FromProto(desc.kind(), "collective");
  const std::string name = CollectiveKindName(kind);
  // all_reduce, the commonest, straight into the first member's output and copied to the
  // others: the same additions in the same (member) order as the reference, without its
  // temporaries.
  if (kind == CollectiveKind::kAllReduce && !members.empty()) {
    Tensor& first = members[0].output;
    for (const CollectiveMember& m : members) {
      if (m.input.shape() != first.shape() || m.input.dtype() != first.dtype() ||
          m.output.shape() != first.shape() || m.output.dtype() != first.dtype()) {
        throw ShapeError(name + " member " + std::to_string(m.member) + " holds " +
                         DTypeName(m.input.dtype()) + m.input.shape().ToString() + " -> " +
                         DTypeName(m.output.dtype()) + m.output.shape().ToString() + ", member 0 " +
                         DTypeName(first.dtype()) + first.shape().ToString());
      }
    }
    // Member 0's output may be another member's input only if the Plan aliases slots, which
    // validation forbids; copy first, then add the others in order.
    std::copy_n(members[0].input.raw(), first.nbytes(), first.raw());
    for (size_t i = 1; i < members.size(); ++i) first.ReduceFrom(members[i].input, op);
    for (size_t i = 1; i < members.size(); ++i) {
      std::copy_n(first.raw(), first.nbytes(), members[i].output.raw());
    }
    return;
  }
  // The reference collectives read their buffers and return new tensors; handing them the
  // views (moved, so no bytes are copied) reads the slots in place.
  std::vector<Tensor> inputs;
  inputs.reserve(members.size());
  for (CollectiveMember& m : members) {
    inputs.push_back(Tensor::View(m.input.shape(), m.input.dtype(), m.input.raw()));
  }
  std::vector<Tensor> results;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      results = sbp::AllReduce(inputs, op);
      break;
    case CollectiveKind::kAllGather:
      results = sbp::AllGather(inputs, desc.gather_axis());
      break;
    case CollectiveKind::kReduceScatter:
      results = sbp::ReduceScatter(inputs, op, desc.scatter_axis());
      break;
    case CollectiveKind::kAllToAll:
      results = sbp::AllToAll(inputs, desc.scatter_axis(), desc.gather_axis());
      break;
    case CollectiveKind::kBroadcast:
      results.assign(members.size(), inputs.at(desc.root()));
      break;
  }
  for (size_t i = 0; i < members.size(); ++i) {
    Tensor& out = members[i].output;
    const Tensor& result = results[i];
    if (result.shape() != out.shape() || result.dtype() != out.dtype()) {
      throw ShapeError(name + " gives member " + std::to_string(i) + " " +
                       DTypeName(result.dtype()) + result.shape().ToString() +
                       " but its output register holds " + DTypeName(out.dtype()) +
                       out.shape().ToString());
    }
    std::copy_n(result.raw(), result.nbytes(), out.raw());
  }
}

}  // namespace twinflow::runtime
