#pragma once
// ActorDriver: the simulation's actors (simulator/sim_executor.h). It drives the runtime's
// Actor state machines on the event loop, places every compute-stream act on its device's
// stream (or, on a CPU host, on the node's shared cores) timed by ActTiming, and writes the
// report. Communication acts and replica gradient syncs go to the CommSystem, the driver's
// only way to the network: it hands them over and hears back when each ended.
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "engine/plan/plan.pb.h"
#include "engine/plan/trace_record.h"
#include "engine/runtime/actor.h"
#include "simulator/act_graph_recorder.h"
#include "simulator/act_timing.h"
#include "simulator/comm_system.h"
#include "simulator/core_sharing.h"
#include "simulator/des/event_queue.h"
#include "simulator/hardware/cluster.h"
#include "simulator/live_memory.h"
#include "simulator/network/network_api.h"
#include "simulator/shared_devices.h"
#include "simulator/sim_executor.h"

namespace twinflow::sim {

// Lifetime: keeps `plan`, `topology`, `queue` and `network` by reference for the one Simulate
// call that makes it; they must outlive it.
class ActorDriver {
 public:
  // `queue`: the event loop the driver runs, whose time `network` keeps too (the comm system
  // gets `network`; the driver never uses it itself). InvalidArgumentError when the Plan uses
  // a device the cluster does not have.
  ActorDriver(const plan::Plan& plan, const Topology& topology, const SimOptions& options,
              EventQueue& queue, NetworkApi& network);

  // Starts every actor and runs the events until none is left.
  SimResult Run();

 private:
  struct Waiting {
    int64_t task = 0;
    bool ready = false;
  };
  using Spans = std::vector<std::pair<Nanos, Nanos>>;

  void Process(runtime::Outbox& out);
  void Finish(int64_t task, Nanos at);
  void Launch(const runtime::Launch& launch);
  void Communicated(int64_t task, Nanos start, Nanos end);
  void SyncGradient(const plan::Task& t, int64_t bytes);
  void Drain(int device);
  void Place(const plan::Task& t);
  void CountFlops(const plan::Task& t);
  void EndAct(const plan::Task& t, Nanos start, Nanos end);
  void RunOnCores(int device);
  int NodeOf(int device) const { return topology_.NodeOf(cluster_device_[device]); }
  double Contention(int device) const;
  void Trace(int64_t task, Nanos start, Nanos end, int stream);
  SimResult Report() const;
  DeviceReport ReportDevice(int device, double total_s) const;

  const plan::Plan& plan_;
  const Topology& topology_;
  SimOptions options_;
  EventQueue& queue_;
  std::vector<int> cluster_device_;  // by plan device
  ActTiming timing_;
  LiveMemory memory_;
  std::unique_ptr<CoreSharing> cores_;  // on a CPU host (cores_per_node set)
  std::unique_ptr<CoreSharing> gpus_;   // where logical devices share accelerators
  CommSystem comm_;                     // after timing_, cores_ and gpus_, which it uses
  std::vector<std::unique_ptr<runtime::Actor>> actors_;
  std::vector<Nanos> device_free_;            // when each compute stream is next free
  std::vector<std::deque<Waiting>> waiting_;  // per device, behind an update awaiting its sync
  std::vector<std::deque<int64_t>> acts_;  // on shared cores or GPUs: per device, its queued acts
  std::vector<Spans> compute_spans_, comm_spans_;
  std::vector<double> flops_;
  int64_t acts_launched_ = 0;
  int64_t total_acts_ = 0;  // every task's acts per step x steps (SimProgress)
  std::vector<plan::TraceSpan> spans_;
  std::unique_ptr<ActGraphRecorder> graph_;  // with SimOptions::act_graph
};

}  // namespace twinflow::sim
