#include "simulator/core_sharing.h"

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
      working_(static_cast<size_t>(nodes), 0) {}

void CoreSharing::Run(int node, int thread, double seconds, std::function<void()> done) {
  ++working_[node];
  network_.Start({{{node, nodes_ + thread}, seconds * kPerCore}}, 0,
                 [this, node, done = std::move(done)] {
                   --working_[node];
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
