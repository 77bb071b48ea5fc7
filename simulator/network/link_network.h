#pragma once
// LinkNetwork: flows of bytes over physical links that share each link's bandwidth max-min
// fairly, in simulated time.
//
// A flow is (bytes, the links it crosses). At any moment every active flow has a rate, the
// max-min fair allocation computed by progressive filling: all unfrozen flows grow at the
// same pace until some link is full; the flows on it freeze at that rate; repeat. So a flow
// gets an equal share of its bottleneck link, and what a flow bottlenecked elsewhere leaves
// unused goes to the others (with three flows A on L1, B on L1+L2, C on L2 and L1 three times
// faster than L2: B and C get half of L2 each, A the rest of L1).
//
// Whenever a flow starts or ends, the flows connected to it through shared links (the only
// ones whose rates can change) are brought up to date: their remaining bytes advanced at the
// old rates, new rates computed, finish times rescheduled. Only one wake-up event is pending
// at a time, at the earliest projected finish, so the event count is one per distinct finish
// time, not per flow. Flows are numbered in the order they start (slots reused last-freed
// first) and finishes are ordered by (time, number): a run is deterministic.
//
// A transfer groups flows that complete together (a phase of a collective): its callback
// runs a fixed latency (the algorithm's per-step latencies, summed) after its last flow drained.
#include <cstdint>
#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "simulator/des/event_queue.h"
#include "simulator/network/flow.h"

namespace twinflow::sim {

class LinkNetwork {
 public:
  // `bandwidths`: bytes per second of each link (> 0).
  LinkNetwork(EventQueue& queue, const std::vector<double>& bandwidths);

  // Starts `flows` now; `done` runs `latency` after the last of them has drained (`latency`
  // from now when none carries bytes).
  void Start(const std::vector<FlowSpec>& flows, Nanos latency, std::function<void()> done);

  int links() const { return static_cast<int>(links_.size()); }
  // Bytes of every flow started over the link.
  double BytesCarried(int link) const { return links_[link].bytes; }
  // Time the link has had at least one flow on it, up to now.
  Nanos BusyTime(int link) const;
  int active_flows() const { return active_; }
  // Keep a LinkLoad whenever a link's load changes (for the trace's link counters).
  void RecordLoads() { record_ = true; }
  const std::vector<LinkLoad>& loads() const { return loads_; }

 private:
  struct Flow {
    std::vector<int> links;
    double remaining = 0;  // bytes, as of `since`
    double rate = 0;       // bytes per nanosecond
    Nanos since = 0;
    Nanos finish = 0;  // projected; in finishes_ while active
    int transfer = -1;
    uint32_t mark = 0;  // the Reshare pass that visited it last
    bool frozen = false;
  };
  struct Link {
    double bandwidth = 0;    // bytes per nanosecond
    std::vector<int> flows;  // active flows, in the order they started
    double bytes = 0;
    Nanos busy = 0;
    Nanos busy_since = 0;
    uint32_t mark = 0;
    double load = 0;   // as last recorded
    double left = 0;   // progressive filling: capacity not yet given
    int unfrozen = 0;  // progressive filling: flows still growing
  };
  struct Transfer {
    int pending = 0;
    Nanos latency = 0;
    std::function<void()> done;
  };

  // New rates for every flow connected to `seeds` through shared links; reschedules them.
  void Reshare(const std::vector<int>& seeds);
  void FillProgressively();  // over comp_links_ / comp_flows_
  void Wake(uint64_t generation);
  void ScheduleWake();
  void EndFlow(int id, std::vector<int>& seeds);

  EventQueue& queue_;
  std::vector<Link> links_;
  std::vector<Flow> flows_;
  std::vector<int> free_flows_;
  std::vector<Transfer> transfers_;
  std::vector<int> free_transfers_;
  std::set<std::pair<Nanos, int>> finishes_;  // (projected finish, flow)
  int active_ = 0;
  uint32_t pass_ = 0;
  uint64_t wake_generation_ = 0;
  bool wake_pending_ = false;
  Nanos wake_at_ = 0;
  std::vector<int> comp_links_, comp_flows_, stack_;  // scratch for Reshare
  bool record_ = false;
  std::vector<LinkLoad> loads_;
};

}  // namespace twinflow::sim
