#include "simulator/core_sharing.h"

#include <algorithm>
#include <utility>

#include "simulator/network/ports.h"

namespace twinflow::sim {

// Work is counted in core-nanoseconds: a core does 1e9 of them a second.
constexpr double kPerCore = 1e9;

std::vector<double> CoreSharing::Capacities(int nodes, int cores_per_node, int threads) {
  std::vector<double> capacities(static_cast<size_t>(nodes), cores_per_node * kPerCore);
  capacities.resize(static_cast<size_t>(nodes + threads), kPerCore);
  return capacities;
}

CoreSharing::CoreSharing(EventQueue& queue, int nodes, int cores_per_node, int threads)
    : nodes_(nodes),
      cores_per_node_(cores_per_node),
      network_(queue, Capacities(nodes, cores_per_node, threads)),
      working_(static_cast<size_t>(nodes), 0),
      polling_(static_cast<size_t>(nodes), 0) {}

double CoreSharing::Contention(int node) const {
  if (AllBusy(node) && polling_[node] == 0) return 1;
  const double working = working_[node] + 1;
  const double rate = std::min(1.0, 2.0 * cores_per_node_ / (2 * working + polling_[node]));
  return std::clamp((working - 1) * rate - (cores_per_node_ - 2), 0.0, 1.0);
}

void CoreSharing::Start(int node, int thread, double seconds, std::function<void()> done,
                        bool polls) {
  (polls ? polling_ : working_)[node] += 1;
  const FlowSpec flow{{node, nodes_ + thread}, seconds * kPerCore / (polls ? 1 : 2)};
  std::vector<FlowSpec> flows(polls ? 1 : 2, flow);  // the shares: 2 working, 1 polling
  network_.Start(flows, 0, [this, node, polls, done = std::move(done)] {
    (polls ? polling_ : working_)[node] -= 1;
    done();
  });
}

double CommCopiedBytes(const CollectivePlan& plan, int device, bool reduces) {
  double out = 0, in = 0;
  for (const CollectivePhase& phase : plan.phases) {
    for (const FlowSpec& flow : phase.flows) {
      for (int link : flow.links) {
        if (link / kPortsPerDevice != device) continue;
        const Port port = static_cast<Port>(link % kPortsPerDevice);
        (port == Port::kIntraOut || port == Port::kNicOut ? out : in) += flow.bytes;
      }
    }
  }
  return out + in + (reduces ? in : 0);
}

}  // namespace twinflow::sim
