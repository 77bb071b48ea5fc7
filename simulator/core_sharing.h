#pragma once
// CoreSharing: the cores of a CPU host (ClusterSpec.cores_per_node), shared by the threads that
// run on them as the OS time-shares them. Every thread with work progresses at min(1, C/R) of
// a core, C the node's cores and R its threads with work (processor sharing): four device
// threads on two cores each run at half speed, as `twinflow run --trace` shows (compute acts
// 1.5 to 2x their calibrated times), rather than two of them running at full speed while the
// others wait for an act to end. Work is a LinkNetwork flow of core-nanoseconds over the
// node's link (C cores) and the thread's own link (one core).
#include <functional>
#include <vector>

#include "simulator/collectives/algorithms.h"
#include "simulator/des/event_queue.h"
#include "simulator/network/link_network.h"

namespace twinflow::sim {

class CoreSharing {
 public:
  CoreSharing(EventQueue& queue, int nodes, int cores_per_node, int threads);

  // Runs `seconds` of work of `thread` (0 <= thread < threads) on `node` from now; `done` runs
  // when it is finished. A thread runs one piece of work at a time: the caller queues.
  void Run(int node, int thread, double seconds, std::function<void()> done);
  // Whether work started on `node` now would have every core of the node working.
  bool AllBusy(int node) const { return working_[node] + 1 >= cores_per_node_; }

 private:
  static std::vector<double> Capacities(int nodes, int cores_per_node, int threads);

  int nodes_;
  int cores_per_node_;
  LinkNetwork network_;
  std::vector<int> working_;  // per node: pieces of work in progress
};

// The bytes cluster device `device` copies for `plan` on a CPU host, where moving bytes is a
// core's work: what it sends and what it receives (each copied once, into or out of shared
// memory or between a process's buffers), and when `reduces`, what it receives once more (read
// again to reduce it).
double CommCopiedBytes(const CollectivePlan& plan, int device, bool reduces);

}  // namespace twinflow::sim
