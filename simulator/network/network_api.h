#pragma once
// NetworkApi: everything the comm system (simulator/comm_system.h) asks of the network, kept as
// narrow as ASTRA-sim's network backend API (the simulated time, a callback later, bytes sent)
// so that another network model can stand in for the LinkNetwork without touching the comm
// system or the actor driver. Communication above it (which collective algorithm, which flows
// in which phase, when an operation may start) is the comm system's; below it only bytes move.
//
// Links are numbered per cluster device and port (simulator/network/ports.h), the one addressing
// both sides share. The report's link figures are asked of it too: what each link carried.
#include <functional>
#include <vector>

#include "simulator/des/event_queue.h"
#include "simulator/network/flow.h"

namespace twinflow::sim {

class NetworkApi {
 public:
  using Callback = std::function<void()>;

  virtual ~NetworkApi() = default;

  // The simulated time.
  virtual Nanos Now() const = 0;
  // Runs `callback` `delay` (>= 0) from now.
  virtual void Schedule(Nanos delay, Callback callback) = 0;
  // Sends `flows` from now, together: each moves its bytes over its links, sharing them with
  // every other flow in flight; `done` runs `latency` after the last of them drained (`latency`
  // from now when none carries bytes).
  virtual void Send(const std::vector<FlowSpec>& flows, Nanos latency, Callback done) = 0;

  // For the report: the bytes of every flow sent over `link`, and the time it carried at least
  // one flow, up to now.
  virtual double BytesCarried(int link) const = 0;
  virtual Nanos BusyTime(int link) const = 0;
  // Every change of a link's load, in time order, when the network records them (the trace's
  // link counters); else none.
  virtual const std::vector<LinkLoad>& Loads() const = 0;
};

}  // namespace twinflow::sim
