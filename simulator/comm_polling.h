#pragma once
// CommPolling: on a CPU host, each rank's MPI comm thread polls (MPI_Test, then sched_yield)
// from the moment the rank has an operation between ranks in flight until none remain
// (engine/comm/mpi_transport.cc, Loop); with none it sleeps. While it polls it is one more
// thread on its node's cores, with half the share of a working thread where they compete
// (CoreSharing::Poll has the measurements). The LinkNetwork under CoreSharing has no cancel,
// so polling is slices of core time, re-issued while the rank has ops in flight.
#include <vector>

#include "engine/plan/plan.pb.h"
#include "simulator/core_sharing.h"

namespace twinflow::sim {

class CommPolling {
 public:
  // Rank r polls on node `node_of_rank[r]` as thread `first_thread + r` of `cores`, in slices
  // of `slice_s` seconds of a core.
  CommPolling(CoreSharing& cores, std::vector<int> node_of_rank, int first_thread,
              double slice_s = kSliceSeconds);

  // `rank` posts an operation between ranks / one of its operations completes.
  void Post(int rank);
  void Complete(int rank);
  // The rank's comm thread copies for one of its operations (CommCopiedBytes) / is done: it
  // does not poll meanwhile (MPI moves the bytes inside MPI_Test).
  void BeginCopy(int rank) { ++copying_[rank]; }
  void EndCopy(int rank);
  int in_flight(int rank) const { return in_flight_[rank]; }

  static constexpr double kSliceSeconds = 50e-6;

 private:
  void Poll(int rank);

  CoreSharing& cores_;
  std::vector<int> node_of_rank_;
  int first_thread_;
  double slice_s_;
  std::vector<int> in_flight_;
  std::vector<int> copying_;
  std::vector<bool> polling_;  // a slice is running
};

// Whether communication task `t` (SEND, RECV, COLLECTIVE) is an operation between ranks, for
// which its rank's comm thread polls.
bool SpansRanks(const plan::Plan& plan, const plan::Task& t);

// Whether the last of `arrived` (the members of one collective that have launched, in order)
// is the last member on its rank: the runtime meets a rank's members first and the last of
// them posts the operation (engine/runtime/device_worker.cc).
bool LastOfItsRank(const plan::Plan& plan, const std::vector<int64_t>& arrived);

}  // namespace twinflow::sim
