#pragma once
// CoreSharing: the cores of a CPU host (ClusterSpec.cores_per_node), shared by the threads that
// run on them as the OS time-shares them. Every thread with work progresses at min(1, C/R) of
// a core, C the node's cores and R its threads with work (processor sharing): four device
// threads on two cores each run at half speed, as `twinflow run --trace` shows (compute acts
// 1.5 to 2x their calibrated times), rather than two of them running at full speed while the
// others wait for an act to end. Work is a LinkNetwork flow of core-nanoseconds over the
// node's link (C cores) and the thread's own link (one core).
#include <functional>
#include <utility>
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
  void Run(int node, int thread, double seconds, std::function<void()> done) {
    Start(node, thread, seconds, std::move(done), false);
  }
  // The same for a thread that polls (an MPI comm thread: MPI_Test, then sched_yield). Such a
  // thread gets half the share of a thread that works where they compete (weighted processor
  // sharing; each working thread is two flows, a polling one one flow): measured with /proc
  // thread times, the two polling comm threads of GPT pp=2 on two cores took 0.33 of a core
  // each and the two device threads 0.66; in the MLP pp=2 the device thread 0.98 and the
  // pollers 0.50 and 0.48. Alone on a core it spins a whole core. Polling touches little
  // memory: it does not make the others' work contended (AllBusy).
  void Poll(int node, int thread, double seconds, std::function<void()> done) {
    Start(node, thread, seconds, std::move(done), true);
  }
  // Whether work started on `node` now would have every core of the node working.
  bool AllBusy(int node) const { return working_[node] + 1 >= cores_per_node_; }
  // The share of its time work started on `node` now would run with every other core of the
  // node working (not polling): with W working threads (this one included) and P polling ones
  // on C cores, a working thread runs at min(1, 2C / (2W + P)) of a core, so the others fill
  // (W - 1) times that of the C - 1 other cores; the share is what exceeds C - 2 of them,
  // clamped to [0, 1]. Without pollers it is AllBusy: 1 when W >= C, else 0.
  double Contention(int node) const;

 private:
  static std::vector<double> Capacities(int nodes, int cores_per_node, int threads);
  void Start(int node, int thread, double seconds, std::function<void()> done, bool polls);

  int nodes_;
  int cores_per_node_;
  LinkNetwork network_;
  std::vector<int> working_;  // per node: pieces of work in progress, polling aside
  std::vector<int> polling_;  // per node: polling slices in progress
};

// The bytes cluster device `device` copies for `plan` on a CPU host, where moving bytes is a
// core's work: what it sends and what it receives (each copied once, into or out of shared
// memory or between a process's buffers), and when `reduces`, what it receives once more (read
// again to reduce it).
double CommCopiedBytes(const CollectivePlan& plan, int device, bool reduces);

}  // namespace twinflow::sim
