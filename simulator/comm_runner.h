#pragma once
// CommRunner: the comm system's collective layer. It turns a collective, a SEND/RECV transfer
// or a replica gradient all-reduce into a CollectivePlan (collectives/algorithms.h: phases of
// flows, the fastest algorithm on idle links) and runs it on the network (NetworkApi), where it
// shares the links with everything else in flight, phase after phase. Collective plans are
// cached by (group, kind, bytes), so a Plan's repeated collectives are planned once.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "engine/plan/trace_record.h"
#include "simulator/collectives/algorithms.h"
#include "simulator/des/event_queue.h"
#include "simulator/hardware/cluster.h"
#include "simulator/network/network_api.h"

namespace twinflow::sim {

using PlanPtr = std::shared_ptr<const CollectivePlan>;

// Lifetime: keeps `network` and `topology` by reference; both must outlive this (one Simulate
// call's, as is the CommSystem that owns this).
class CommRunner {
 public:
  CommRunner(NetworkApi& network, const Topology& topology);

  // `devices`: cluster devices of group `group`, in the group's order.
  PlanPtr Collective(int64_t group, CollectiveKind kind, const std::vector<int>& devices,
                     int64_t bytes);
  // From one cluster device to another: latency + bytes over the path's links (none when the
  // same device).
  PlanPtr Transfer(int from, int to, int64_t bytes) const;
  PlanPtr ReplicaAllReduce(int device, int replicas, int64_t bytes);

  // Runs `plan` from `start` (not before now); `done` runs when its last phase completed.
  void Run(PlanPtr plan, Nanos start, std::function<void()> done);

  // The network's recorded loads for the trace, by plan device (`cluster_device`: plan ->
  // cluster).
  std::vector<plan::LinkSample> LinkSamples(const std::vector<int>& cluster_device) const;

 private:
  void RunPhase(PlanPtr plan, size_t phase, std::function<void()> done);

  NetworkApi& network_;
  const Topology& topology_;
  std::map<std::tuple<int64_t, CollectiveKind, int64_t>, PlanPtr> collectives_;
  std::map<std::pair<int, int64_t>, PlanPtr> replicas_;
};

}  // namespace twinflow::sim
