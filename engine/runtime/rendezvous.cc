#include "engine/runtime/rendezvous.h"

#include <utility>

#include "engine/core/error.h"

namespace twinflow::runtime {

CollectiveMember CollectiveMember::Of(int64_t task, int device, int member, Tensor input,
                                      Tensor output) {
  CollectiveMember m{task, device, member, {}, nullptr};
  m.tensors.push_back({std::move(input), std::move(output)});
  return m;
}

CollectiveTensors& CollectiveMember::one() {
  return const_cast<CollectiveTensors&>(static_cast<const CollectiveMember&>(*this).one());
}

const CollectiveTensors& CollectiveMember::one() const {
  if (tensors.size() != 1) {
    throw CommError("member " + std::to_string(member) + " of a collective brings " +
                    std::to_string(tensors.size()) + " tensors where one was expected");
  }
  return tensors[0];
}

std::optional<std::vector<CollectiveMember>> Rendezvous::Arrive(int64_t group, int64_t issue_order,
                                                                int64_t piece, int group_size,
                                                                int expected,
                                                                CollectiveMember member) {
  std::vector<std::optional<CollectiveMember>> arrived;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Meeting& meeting = meetings_[Key{group, issue_order, piece}];
    if (meeting.slots.empty()) {
      meeting.slots.resize(group_size);
      meeting.expected = expected;
    }
    auto& slots = meeting.slots;
    if (member.member < 0 || member.member >= static_cast<int>(slots.size()) ||
        slots[member.member]) {
      throw CommError("member " + std::to_string(member.member) + " arrived twice at collective " +
                      std::to_string(issue_order) + " of comm group " + std::to_string(group));
    }
    const int index = member.member;
    slots[index] = std::move(member);
    if (++meeting.arrived < meeting.expected) return std::nullopt;
    arrived = std::move(slots);
    meetings_.erase(Key{group, issue_order, piece});
  }
  std::vector<CollectiveMember> members;
  for (auto& m : arrived) {
    if (m) members.push_back(std::move(*m));
  }
  return members;
}

std::vector<std::string> Rendezvous::Pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [key, meeting] : meetings_) {
    const auto& slots = meeting.slots;
    const auto [group, order, piece] = key;
    int arrived = 0;
    std::string missing;
    for (size_t m = 0; m < slots.size(); ++m) {
      if (slots[m]) {
        ++arrived;
      } else {
        missing += (missing.empty() ? "" : ",") + std::to_string(m);
      }
    }
    out.push_back("comm group " + std::to_string(group) + " collective " + std::to_string(order) +
                  " piece " + std::to_string(piece) + ": " + std::to_string(arrived) + " of " +
                  std::to_string(meeting.expected) + " members of this process arrived (" +
                  std::to_string(slots.size()) + " in the group), not member(s) " + missing);
  }
  return out;
}

}  // namespace twinflow::runtime
