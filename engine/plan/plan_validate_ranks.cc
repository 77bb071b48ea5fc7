// Ranks: a task reads only registers of its own rank (a process cannot read another's memory),
// and every SEND has exactly one RECV with its tag, on its peer device, reading the same
// register for the same number of bytes.
#include <map>
#include <string>

#include "engine/plan/plan_validate_internal.h"

namespace twinflow::plan::validation {

void Validator::CheckRanks() const {
  const auto rank_of_task = [&](int64_t t) {
    return plan_.devices(plan_.tasks(t).device()).rank();
  };
  for (int64_t t = 0; t < plan_.tasks_size(); ++t) {
    for (int64_t r : plan_.tasks(t).consumed_regsts()) {
      const int64_t producer = plan_.regsts(r).producer();
      if (rank_of_task(producer) != rank_of_task(t)) {
        Fail(TaskText(t) + " on rank " + Str(rank_of_task(t)) + " consumes " + RegstText(r) +
             " of rank " + Str(rank_of_task(producer)) + " (ranks exchange data by SEND and RECV)");
      }
    }
  }
  std::map<int64_t, int64_t> sends, recvs;  // tag -> task
  for (int64_t t = 0; t < plan_.tasks_size(); ++t) {
    const Task& task = plan_.tasks(t);
    if (task.kind() != SEND && task.kind() != RECV) continue;
    auto& by_tag = task.kind() == SEND ? sends : recvs;
    if (!by_tag.emplace(task.tag(), t).second) {
      Fail(TaskText(t) + " has tag " + Str(task.tag()) + ", which another " +
           TaskKind_Name(task.kind()) + " has too");
    }
  }
  for (const auto& [tag, s] : sends) {
    const auto it = recvs.find(tag);
    if (it == recvs.end()) Fail(TaskText(s) + " has no RECV with its tag " + Str(tag));
    const Task& send = plan_.tasks(s);
    const Task& recv = plan_.tasks(it->second);
    if (send.peer() != recv.device() || recv.peer() != send.device()) {
      Fail(TaskText(s) + " and " + TaskText(it->second) + " (tag " + Str(tag) +
           ") are not each other's peers");
    }
    if (send.transfers_size() != 1 || recv.transfers_size() != 1 ||
        send.transfers(0).src_regst() != recv.transfers(0).src_regst() ||
        send.transfers(0).region().SerializeAsString() !=
            recv.transfers(0).region().SerializeAsString()) {
      Fail(TaskText(s) + " and " + TaskText(it->second) +
           " must each have one transfer, of the same register and region");
    }
  }
  for (const auto& [tag, r] : recvs) {
    if (!sends.count(tag)) Fail(TaskText(r) + " has no SEND with its tag " + Str(tag));
  }
}

}  // namespace twinflow::plan::validation
