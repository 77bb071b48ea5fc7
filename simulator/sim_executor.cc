#include "simulator/sim_executor.h"

#include "engine/core/error.h"
#include "simulator/actor_driver.h"
#include "simulator/des/event_queue.h"
#include "simulator/network/link_network_backend.h"

namespace twinflow::sim {

SimResult Simulate(const plan::Plan& plan, const Topology& topology, const SimOptions& options) {
  if (options.steps < 1) throw InvalidArgumentError("the simulation needs at least one step");
  // The three parts, each knowing only the next one's interface: the actor driver runs the
  // event loop and hands communication to its CommSystem, which moves bytes on the network.
  EventQueue queue;
  LinkNetworkBackend network(queue, topology, /*record_loads=*/options.trace);
  return ActorDriver(plan, topology, options, queue, network).Run();
}

}  // namespace twinflow::sim
