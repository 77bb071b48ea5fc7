#pragma once
// The vocabulary between the network and its users: a flow of bytes over links, and a link's
// load over time. Links are numbered as simulator/network/ports.h numbers them (or, for
// CoreSharing's own LinkNetwork, as it numbers its core links).
#include <vector>

#include "simulator/des/event_queue.h"

namespace twinflow::sim {

struct FlowSpec {
  std::vector<int> links;  // indexes into the network's links (simulator/network/ports.h)
  double bytes = 0;
};

// A link's load from `at` on: the fraction of its bandwidth its flows take.
struct LinkLoad {
  int link = 0;
  Nanos at = 0;
  double load = 0;
};

}  // namespace twinflow::sim
