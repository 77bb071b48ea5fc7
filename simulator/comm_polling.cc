#include "simulator/comm_polling.h"

#include <utility>

namespace twinflow::sim {

CommPolling::CommPolling(CoreSharing& cores, std::vector<int> node_of_rank, int first_thread,
                         double slice_s)
    : cores_(cores),
      node_of_rank_(std::move(node_of_rank)),
      first_thread_(first_thread),
      slice_s_(slice_s),
      in_flight_(node_of_rank_.size(), 0),
      copying_(node_of_rank_.size(), 0),
      polling_(node_of_rank_.size(), false) {}

void CommPolling::Post(int rank) {
  if (++in_flight_[rank] == 1 && copying_[rank] == 0 && !polling_[rank]) Poll(rank);
}

void CommPolling::Complete(int rank) { --in_flight_[rank]; }

void CommPolling::EndCopy(int rank) {
  if (--copying_[rank] == 0 && in_flight_[rank] > 0 && !polling_[rank]) Poll(rank);
}

void CommPolling::Poll(int rank) {
  polling_[rank] = true;
  cores_.Poll(node_of_rank_[rank], first_thread_ + rank, slice_s_, [this, rank] {
    polling_[rank] = false;
    if (in_flight_[rank] > 0 && copying_[rank] == 0) Poll(rank);
  });
}

bool SpansRanks(const plan::Plan& plan, const plan::Task& t) {
  const int rank = plan.devices(t.device()).rank();
  if (t.kind() == plan::SEND || t.kind() == plan::RECV) {
    return plan.devices(static_cast<int>(t.peer())).rank() != rank;
  }
  if (t.kind() != plan::COLLECTIVE) return false;
  for (int32_t d : plan.groups(static_cast<int>(t.collective().group())).devices()) {
    if (plan.devices(d).rank() != rank) return true;
  }
  return false;
}

bool LastOfItsRank(const plan::Plan& plan, const std::vector<int64_t>& arrived) {
  const plan::Task& last = plan.tasks(static_cast<int>(arrived.back()));
  const int rank = plan.devices(last.device()).rank();
  int on_rank = 0, here = 0;
  for (int32_t d : plan.groups(static_cast<int>(last.collective().group())).devices()) {
    on_rank += plan.devices(d).rank() == rank;
  }
  for (int64_t member : arrived) {
    here += plan.devices(plan.tasks(static_cast<int>(member)).device()).rank() == rank;
  }
  return here == on_rank;
}

}  // namespace twinflow::sim
