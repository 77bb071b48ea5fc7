#pragma once
// Rendezvous: where the members of one in-process collective meet. Each member deposits its
// input and output slot views and returns at once, so a device thread never waits for another;
// the last to arrive gets every member back (in member order) and computes for all.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/runtime/host_staging.h"

namespace twinflow::runtime {

// One tensor of a collective on one member: views of its input and output slots (host copies
// when staged).
struct CollectiveTensors {
  Tensor input;
  Tensor output;
};

struct CollectiveMember {
  int64_t task = 0;
  int device = 0;
  int member = 0;
  // One tensor, or a bucket's (plan.proto's CollectiveDesc): input k is reduced into output k.
  std::vector<CollectiveTensors> tensors;
  // Staged through the host (host_staging.h): the outputs are views of staged->host, uploaded
  // into staged->slots once the collective is done. Null otherwise.
  std::shared_ptr<const StagedArrival> staged;

  // A member of one tensor, its views moved in (an initializer list would copy them, and
  // copying a Tensor copies its bytes).
  static CollectiveMember Of(int64_t task, int device, int member, Tensor input, Tensor output);
  // The member's one tensor; CommError for a bucket, which only in-process collectives and
  // NCCL take as it is (the device thread packs it for the MPI transport).
  CollectiveTensors& one();
  const CollectiveTensors& one() const;
};

class Rendezvous {
 public:
  // One meeting per (group, issue_order, piece) of the `expected` members of this process (all
  // of the group's, or this rank's share when it spans ranks). Returns the members, in member
  // order, to the last to arrive.
  std::optional<std::vector<CollectiveMember>> Arrive(int64_t group, int64_t issue_order,
                                                      int64_t piece, int group_size, int expected,
                                                      CollectiveMember member);
  // The meetings still waiting for members, e.g. "group 0 collective 3 piece 1: 1 of 2
  // members arrived", for timeout reports.
  std::vector<std::string> Pending() const;

 private:
  using Key = std::tuple<int64_t, int64_t, int64_t>;
  mutable std::mutex mutex_;
  struct Meeting {
    std::vector<std::optional<CollectiveMember>> slots;  // by member index
    int arrived = 0;
    int expected = 0;
  };
  std::map<Key, Meeting> meetings_;
};

}  // namespace twinflow::runtime
