#include "engine/sbp/send_recv_closed_form.h"

#include <algorithm>
#include <map>

namespace twinflow::sbp {
namespace {

// The parallel indices of `placement` by node.
std::map<int64_t, std::vector<int64_t>> ByNode(const Placement& placement, int64_t node_size) {
  std::map<int64_t, std::vector<int64_t>> nodes;
  for (int64_t i = 0; i < placement.size(); ++i) {
    nodes[placement.device(i).index / node_size].push_back(i);
  }
  return nodes;
}

}  // namespace

std::optional<BoxingStep> SendRecvClosedForm(const StepContext& ctx, const LayoutFacts& from,
                                             const LayoutFacts& to, const RegionGrid& source,
                                             const std::vector<int64_t>& local) {
  const int64_t node_size = ctx.cost_model.NodeSize();
  if (node_size <= 0 || source.UniformHolders() != 1) return std::nullopt;
  const RegionGrid target(to.regions);
  const int64_t copies = target.UniformHolders();
  if (copies == 0) return std::nullopt;
  const Placement& src = from.layout.placement;
  const Placement& dst = to.layout.placement;
  const int64_t size = DTypeSize(ctx.dtype);

  // Every piece each device receives and sends: one per (source, destination) pair whose
  // slices meet, the source being the only holder of its cell.
  std::vector<RegionGrid::Meeting> received(dst.size()), sent(src.size());
  for (int64_t j = 0; j < dst.size(); ++j) received[j] = source.Meet(to.regions[j]);
  for (int64_t s = 0; s < src.size(); ++s) {
    const RegionGrid::Meeting meeting = target.Meet(from.regions[s]);
    sent[s] = {meeting.cells * copies, meeting.numel * copies};
  }

  // The pieces within a node, priced one by one and taken out of those sums.
  BoxingStep step;
  step.kind = BoxingStepKind::kSendRecv;
  step.from = from.layout;
  step.to = to.layout;
  std::vector<double> send_time(src.size(), 0.0), receive_time(dst.size(), 0.0);
  const std::map<int64_t, std::vector<int64_t>> sources_by_node = ByNode(src, node_size);
  for (int64_t j = 0; j < dst.size(); ++j) {
    const auto node = sources_by_node.find(dst.device(j).index / node_size);
    if (node == sources_by_node.end()) continue;
    for (const int64_t s : node->second) {
      const int64_t numel = to.regions[j].IntersectNumel(from.regions[s]);
      if (numel == 0) continue;
      received[j].cells -= 1;
      received[j].numel -= numel;
      sent[s].cells -= 1;
      sent[s].numel -= numel;
      if (s == local[j]) continue;  // already there
      const int64_t bytes = numel * size;
      const double time = ctx.cost_model.MessageTime(src.device(s), dst.device(j), bytes);
      send_time[s] += time;
      receive_time[j] += time;
      step.link_bytes[ctx.cost_model.Classify(src.device(s), dst.device(j))] += bytes;
    }
  }

  // What is left crosses nodes, every message priced alike.
  int64_t across = 0;
  for (int64_t j = 0; j < dst.size(); ++j) {
    receive_time[j] += ctx.cost_model.InterNodeTime(received[j].cells, received[j].numel * size);
    across += received[j].numel;
  }
  for (int64_t s = 0; s < src.size(); ++s) {
    send_time[s] += ctx.cost_model.InterNodeTime(sent[s].cells, sent[s].numel * size);
  }
  if (across > 0) step.link_bytes[LinkClass::kInterNode] += across * size;
  for (double t : send_time) step.time = std::max(step.time, t);
  for (double t : receive_time) step.time = std::max(step.time, t);
  return step;
}

}  // namespace twinflow::sbp
