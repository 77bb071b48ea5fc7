#include "engine/sbp/cost_model.h"

#include <algorithm>

namespace twinflow::sbp {

const char* LinkClassName(LinkClass link) {
  switch (link) {
    case LinkClass::kSameDevice:
      return "local";
    case LinkClass::kIntraNode:
      return "intra-node";
    case LinkClass::kInterNode:
      return "inter-node";
    case LinkClass::kHostDevice:
      return "host-device";
  }
  return "unknown";
}

double CostModel::TransferTime(const std::vector<Transfer>& transfers) const {
  // Ordered maps: the result is a max, but keep iteration deterministic anyway.
  std::map<DeviceId, double> out_time, in_time;
  for (const Transfer& t : transfers) {
    const double cost = MessageTime(t.src, t.dst, t.bytes);
    if (cost == 0) continue;
    out_time[t.src] += cost;
    in_time[t.dst] += cost;
  }
  double worst = 0.0;
  for (const auto& [device, time] : out_time) worst = std::max(worst, time);
  for (const auto& [device, time] : in_time) worst = std::max(worst, time);
  return worst;
}

LinkBytes CostModel::TransferLinkBytes(const std::vector<Transfer>& transfers) const {
  LinkBytes out;
  for (const Transfer& t : transfers) {
    if (t.bytes <= 0 || t.src == t.dst) continue;
    out[Classify(t.src, t.dst)] += t.bytes;
  }
  return out;
}

}  // namespace twinflow::sbp
