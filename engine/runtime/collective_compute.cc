#include "engine/runtime/collective_compute.h"

#include <algorithm>
#include <string>
#include <utility>

#include "engine/core/collective_kind.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/sbp/collective_reference.h"

namespace twinflow::runtime {

namespace {

void CheckAllReduceMembers(const std::string& name, const std::vector<CollectiveMember>& members) {
  const Tensor& first = members[0].output;
  for (const CollectiveMember& m : members) {
    if (m.input.shape() != first.shape() || m.input.dtype() != first.dtype() ||
        m.output.shape() != first.shape() || m.output.dtype() != first.dtype()) {
      throw ShapeError(name + " member " + std::to_string(m.member) + " holds " +
                       DTypeName(m.input.dtype()) + m.input.shape().ToString() + " -> " +
                       DTypeName(m.output.dtype()) + m.output.shape().ToString() + ", member 0 " +
                       DTypeName(first.dtype()) + first.shape().ToString());
    }
  }
}

// The reference collective's results for the members' inputs, read in place on a cpu device and
// through host copies elsewhere.
std::vector<Tensor> ReferenceResults(Device& device, const plan::CollectiveDesc& desc,
                                     CollectiveKind kind, ReduceOp op,
                                     std::vector<CollectiveMember>& members) {
  std::vector<Tensor> inputs;
  inputs.reserve(members.size());
  for (CollectiveMember& m : members) {
    // A view moves no bytes: the reference reads the slot itself.
    inputs.push_back(device.type() == DeviceType::kCpu
                         ? Tensor::View(m.input.shape(), m.input.dtype(), m.input.raw())
                         : device.Download(m.input));
  }
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return sbp::AllReduce(inputs, op);
    case CollectiveKind::kAllGather:
      return sbp::AllGather(inputs, desc.gather_axis());
    case CollectiveKind::kReduceScatter:
      return sbp::ReduceScatter(inputs, op, desc.scatter_axis());
    case CollectiveKind::kAllToAll:
      return sbp::AllToAll(inputs, desc.scatter_axis(), desc.gather_axis());
    case CollectiveKind::kBroadcast:
      return std::vector<Tensor>(members.size(), inputs.at(desc.root()));
  }
  return {};
}

}  // namespace

void ComputeCollective(Device& device, const plan::CollectiveDesc& desc, ReduceOp op,
                       std::vector<CollectiveMember>& members) {
  const CollectiveKind kind = plan::FromProto(desc.kind(), "collective");
  const std::string name = CollectiveKindName(kind);
  // all_reduce, the commonest, straight into the first member's output and copied to the
  // others: the same additions in the same (member) order as the reference, without its
  // temporaries.
  if (kind == CollectiveKind::kAllReduce && !members.empty()) {
    CheckAllReduceMembers(name, members);
    Tensor& first = members[0].output;
    // An in-place all_reduce (CollectiveDesc.in_place) has each member's output at its own
    // input's bytes: member 0's sum starts from its input where it lies, and the others' inputs
    // are read before their outputs are written. Validation forbids any other aliasing.
    if (members[0].input.raw() != first.raw()) device.Copy(members[0].input, first);
    for (size_t i = 1; i < members.size(); ++i) device.ReduceInto(members[i].input, first, op);
    for (size_t i = 1; i < members.size(); ++i) device.Copy(first, members[i].output);
    return;
  }
  const std::vector<Tensor> results = ReferenceResults(device, desc, kind, op, members);
  for (size_t i = 0; i < members.size(); ++i) {
    Tensor& out = members[i].output;
    const Tensor& result = results[i];
    if (result.shape() != out.shape() || result.dtype() != out.dtype()) {
      throw ShapeError(name + " gives member " + std::to_string(i) + " " +
                       DTypeName(result.dtype()) + result.shape().ToString() +
                       " but its output register holds " + DTypeName(out.dtype()) +
                       out.shape().ToString());
    }
    device.Upload(result, out);
  }
}

}  // namespace twinflow::runtime
