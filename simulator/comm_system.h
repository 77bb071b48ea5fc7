#pragma once
// CommSystem: the simulation's communication, between the actor driver (actor_driver.h) and
// the network (network/network_api.h). The driver hands it every communication act and every
// replica gradient sync and hears back when each ended; the comm system decides when an
// operation may start and how it moves, and uses the network only through NetworkApi.
//
//   - A COLLECTIVE starts when its last member arrived (members meet by group, issue order and
//     piece) as the fastest algorithm on idle links (CommRunner, collectives/algorithms.h),
//     and ends for every member at once.
//   - A SEND and its RECV (met by tag and piece) start when both have, as one flow plus the
//     link's latency, and end together.
//   - On a CPU host (CoreSharing given) moving bytes is the cores' work too: each device's comm
//     thread copies what it sends and receives, and each rank's MPI comm thread polls while
//     the rank has an operation between ranks in flight (CommPolling).
//   - With data-parallel replicas an optimizer update's gradient is all-reduced over them first.
//
// Threads of the CoreSharing, for P plan devices: 0..P-1 the device threads (the driver's),
// P..2P-1 their comm threads, 2P + r the poller of rank r (CoreThreads counts them).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/plan/plan.pb.h"
#include "engine/plan/plan_fold.h"
#include "engine/plan/trace_record.h"
#include "simulator/act_timing.h"
#include "simulator/comm_polling.h"
#include "simulator/comm_runner.h"
#include "simulator/core_sharing.h"
#include "simulator/des/event_queue.h"
#include "simulator/hardware/cluster.h"
#include "simulator/network/network_api.h"

namespace twinflow::sim {

// What a plan device's outgoing ports carried (the report's link figures).
struct PortTraffic {
  double intra_bytes = 0;
  double inter_bytes = 0;
  Nanos intra_busy = 0;
  Nanos inter_busy = 0;
};

// The threads a CPU host's CoreSharing runs for `plan` (the layout above).
int CoreThreads(const plan::Plan& plan);

// Lifetime: keeps `plan`, `topology`, `network`, `timing` and `cores` (when given) by
// reference; all must outlive this (they and this live for one Simulate call).
class CommSystem {
 public:
  // The operation of communication task `task` ran over [start, end]: its act is done.
  using Finished = std::function<void(int64_t task, Nanos start, Nanos end)>;
  // A replica gradient sync ran over [start, end].
  using Synced = std::function<void(Nanos start, Nanos end)>;

  // `cluster_device`: the cluster device of each plan device. `timing`: a device's memory
  // speed, for the copies on a CPU host. `cores`: a CPU host's cores, else null. `gpus`: the
  // accelerators logical devices share (shared_devices.h), else null. `replicas`:
  // SimOptions::data_parallel_replicas.
  CommSystem(const plan::Plan& plan, const Topology& topology, std::vector<int> cluster_device,
             NetworkApi& network, const ActTiming& timing, CoreSharing* cores, CoreSharing* gpus,
             int replicas, Finished finished);

  // Communication task `t` (COLLECTIVE, SEND or RECV) launched its act for `piece`; `finished`
  // runs when its operation ended.
  void Launch(const plan::Task& t, int64_t piece);

  // For an optimizer update of one of several data-parallel replicas, the bytes of its
  // gradient, which it all-reduces over the replicas first; else 0.
  int64_t ReplicaGradientBytes(const plan::Task& t) const;
  // The gradient all-reduce of `t` (`bytes`, ReplicaGradientBytes) over the replicas, on the
  // communication stream, from now; `synced` runs when it ends.
  void SyncGradient(const plan::Task& t, int64_t bytes, Synced synced);

  // What plan device `device`'s outgoing ports carried, up to now.
  PortTraffic Traffic(int device) const;
  // The links' loads for the trace, by plan device.
  std::vector<plan::LinkSample> LinkSamples() const;

 private:
  void Meet(const plan::Task& t, int64_t piece);  // a COLLECTIVE
  void Pair(const plan::Task& t, int64_t piece);  // a SEND or RECV
  void Communicate(const PlanPtr& plan, const std::vector<int>& devices, std::vector<int64_t> tasks,
                   bool reduces, int64_t staged);
  void InMemory(CollectiveKind kind, int64_t bytes, bool in_place, int gpu,
                std::vector<int64_t> tasks);
  void EndPolling(const std::vector<int64_t>& tasks);
  int64_t RegstBytes(int64_t regst) const;
  int NodeOf(int device) const { return topology_.NodeOf(cluster_device_[device]); }

  const plan::Plan& plan_;
  const plan::DeviceFold fold_;  // the Plan's, read once
  const Topology& topology_;
  std::vector<int> cluster_device_;  // by plan device
  NetworkApi& network_;
  const ActTiming& timing_;
  CoreSharing* cores_;                    // on a CPU host (cores_per_node set), else null
  CoreSharing* gpus_;                     // where logical devices share accelerators, else null
  std::unique_ptr<CommPolling> polling_;  // on a CPU host: the ranks' polling comm threads
  int replicas_;
  Finished finished_;
  CommRunner runner_;
  // Members that arrived, by (group, issue order, piece) and SEND/RECV by (tag, piece).
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<int64_t>> collectives_;
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> pairs_;
};

}  // namespace twinflow::sim
