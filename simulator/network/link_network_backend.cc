#include "simulator/network/link_network_backend.h"

#include <utility>

#include "simulator/network/ports.h"

namespace twinflow::sim {

LinkNetworkBackend::LinkNetworkBackend(EventQueue& queue, const Topology& topology,
                                       bool record_loads)
    : queue_(queue), network_(queue, LinkBandwidths(topology)) {
  if (record_loads) network_.RecordLoads();
}

void LinkNetworkBackend::Schedule(Nanos delay, Callback callback) {
  queue_.Schedule(queue_.now() + delay, std::move(callback));
}

void LinkNetworkBackend::Send(const std::vector<FlowSpec>& flows, Nanos latency, Callback done) {
  network_.Start(flows, latency, std::move(done));
}

}  // namespace twinflow::sim
