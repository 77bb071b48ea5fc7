#pragma once
// SimExecutor: runs a Plan in simulated time on a modelled cluster. It drives the very Actor
// state machine the ThreadedExecutor runs (engine/runtime/actor.h), so back-pressure, slot
// counts, orders and termination are the real ones; only the acts are timed instead of done.
//
// Timing. Each device runs one act at a time on its compute stream, as a device thread does
// (and, when the spec says a node's devices share fewer cores, only that many at once per
// node): COMPUTE takes launch overhead + its measured time when the spec's kernel table has
// its KernelKey, else max(flops / (peak x efficiency), bytes / (memory bandwidth x
// efficiency)); COPY its transfers over the link to each source device (memory for its own);
// ACC, REPEAT, ASSIGN and SOURCE their bytes through memory. Communication does not hold the
// compute stream and runs as flows on the physical links (simulator/comm_system.h): a
// COLLECTIVE starts when its last member arrived, as the fastest algorithm on idle links
// (ring, hierarchical or double binary tree: simulator/collectives/algorithms.h), and
// completes for every member at once; a SEND and its RECV start when both have, as one flow
// plus the link's latency. Flows in flight share every link max-min fairly
// (simulator/network/link_network.h), so alone on idle links a collective takes its closed
// form (ring.h, tree.h) and concurrent ones slow each other down. Messages between actors
// take no time. Events are ordered by (time, scheduling order), so a run is deterministic.
//
// Per device it reports busy (computing), exposed communication (communicating and not
// computing), bubble (neither) and the planned peak memory against capacity.
//
// A folded Plan (engine/plan/plan_fold.h) holds copy 0 of a data-parallel symmetry: its actors
// stand in for every copy. A collective over a group spanning the copies starts when copy 0's
// members arrived (the other copies' arrive then too) and runs every copy's flows on their
// own links; a COPY reading another copy is timed over the link from that copy's device; the
// other copies' devices report copy 0's figures.
//
// Parts (docs/simulator.md, Architecture): the ActorDriver (actor_driver.h) runs the actors,
// the event loop and the compute streams, and hands communication to the CommSystem
// (comm_system.h), which moves its bytes through the NetworkApi (network/network_api.h), here
// a LinkNetworkBackend.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/plan/plan.pb.h"
#include "engine/plan/trace_record.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::sim {

// How far a simulation is: its events so far, the simulated time, and the acts launched out of
// all the run will launch (every task's acts per step times the steps), a total known up front.
struct SimProgress {
  int64_t events = 0;
  double simulated_s = 0;
  int64_t acts = 0;
  int64_t total_acts = 0;
};

struct SimOptions {
  int64_t steps = 1;
  bool trace = false;  // record every act and counter (SimResult::trace; engine/trace writes it)
  // Record the graph of the acts (SimResult::trace.acts), for Chakra export.
  bool act_graph = false;
  // Called every `progress_every` events, for long runs (it must not throw).
  std::function<void(const SimProgress&)> progress;
  int64_t progress_every = 1 << 20;
  // The Plan is one of this many identical data-parallel replicas, each on nodes of its own:
  // every optimizer update (sgd_update, sgd_momentum_update, adam_update) first all-reduces its
  // gradient over the replicas (a ring over the inter-node links, on the communication
  // stream). Large data-parallel jobs are simulated this way without lowering every replica.
  int data_parallel_replicas = 1;
  // > 0: the Plan's logical devices run on the cluster's first this many devices, logical
  // device i on device i mod this, sharing it as `twinflow run` shares one GPU among several
  // logical devices (shared_devices.h).
  int physical_devices = 0;
};

struct DeviceReport {
  int plan_device = 0;
  int cluster_device = 0;
  std::string name;           // "gpu:3" (sim::DeviceName)
  double busy_s = 0;          // computing
  double exposed_comm_s = 0;  // communicating while not computing
  double bubble_s = 0;        // neither
  double flops = 0;           // COMPUTE flops done, recomputation left out (the model's)
  int64_t peak_bytes = 0;     // the memory plan's peak
  int64_t arena_bytes = 0;
  int64_t live_peak_bytes = 0;  // the most bytes of live slots the run reached (as the
                                // runtime's arena counts them; variables live throughout)
  bool out_of_memory = false;   // the arena exceeds the device's memory
  // Bytes the device sent over its intra-node fabric and its NIC (collectives, transfers and
  // replica syncs as their flows crossed its outgoing ports, plus COPY reads from it), their
  // utilisation (bytes over time x bandwidth: the average fraction of the port's capacity
  // used) and the time each outgoing port carried at least one flow.
  double intra_bytes = 0;
  double inter_bytes = 0;
  double intra_utilisation = 0;
  double inter_utilisation = 0;
  double intra_busy_s = 0;
  double inter_busy_s = 0;
};

struct SimResult {
  bool finished = false;
  std::string deadlock_report;  // one WaitingOn line per stuck actor when !finished
  double total_s = 0;
  double step_s = 0;
  double flops_per_step = 0;  // over all devices
  double mfu = 0;             // model flops / (time x devices x peak), as Megatron counts it
  int64_t events = 0;
  std::vector<DeviceReport> devices;
  plan::TraceRecord trace;  // when SimOptions::trace
};

// InvalidArgumentError when the Plan uses a device the cluster does not have.
SimResult Simulate(const plan::Plan& plan, const Topology& topology, const SimOptions& options);

}  // namespace twinflow::sim
