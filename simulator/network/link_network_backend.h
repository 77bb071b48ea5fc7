#pragma once
// LinkNetworkBackend: the NetworkApi of the physical links (ports.h) as a LinkNetwork, flows
// sharing every link max-min fairly, timed by the simulation's EventQueue.
#include "simulator/des/event_queue.h"
#include "simulator/hardware/cluster.h"
#include "simulator/network/link_network.h"
#include "simulator/network/network_api.h"

namespace twinflow::sim {

// Lifetime: keeps `queue` by reference; it must outlive this (both live for one Simulate call).
class LinkNetworkBackend final : public NetworkApi {
 public:
  // The links of `topology`'s devices (LinkBandwidths); `record_loads`: keep every change of a
  // link's load (Loads).
  LinkNetworkBackend(EventQueue& queue, const Topology& topology, bool record_loads);

  Nanos Now() const override { return queue_.now(); }
  void Schedule(Nanos delay, Callback callback) override;
  void Send(const std::vector<FlowSpec>& flows, Nanos latency, Callback done) override;

  double BytesCarried(int link) const override { return network_.BytesCarried(link); }
  Nanos BusyTime(int link) const override { return network_.BusyTime(link); }
  const std::vector<LinkLoad>& Loads() const override { return network_.loads(); }

 private:
  EventQueue& queue_;
  LinkNetwork network_;
};

}  // namespace twinflow::sim
