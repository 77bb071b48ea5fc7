#include "engine/sbp/send_recv_closed_form.h"

#include <algorithm>
#include <map>
#include <optional>

namespace twinflow::sbp {
namespace {

// The parallel indices of a placement on each node, ascending: one run of indices, found by
// binary search, when the device ids ascend with the index (the common case), else grouped
// once.
class NodeSources {
 public:
  // `placement` must outlive this (one pricing); node_size > 0.
  NodeSources(const Placement& placement, int64_t node_size)
      : placement_(placement), node_size_(node_size) {
    if (placement.ids_ascend()) return;
    for (int64_t i = 0; i < placement.size(); ++i) {
      grouped_[placement.device(i).index / node_size].push_back(i);
    }
  }

  // fn(s) for each parallel index on the node of the device with id `device`, ascending.
  template <typename Fn>
  void ForEach(int64_t device, Fn fn) const {
    const int64_t first = device / node_size_ * node_size_;
    if (placement_.ids_ascend()) {
      const std::vector<int64_t>& ids = placement_.device_ids();
      const auto lo = std::lower_bound(ids.begin(), ids.end(), first);
      const auto hi = std::lower_bound(lo, ids.end(), first + node_size_);
      for (auto it = lo; it != hi; ++it) fn(static_cast<int64_t>(it - ids.begin()));
      return;
    }
    const auto it = grouped_.find(first / node_size_);
    if (it == grouped_.end()) return;
    for (const int64_t s : it->second) fn(s);
  }

 private:
  const Placement& placement_;
  int64_t node_size_;
  std::map<int64_t, std::vector<int64_t>> grouped_;
};

// What destination j must receive, as messages (one per source cell) and elements, split by
// whether a device on its own node holds them: `on` may come over the node's links, `off`
// must cross nodes. Its own slice costs nothing. `seen` is scratch.
struct Needs {
  RegionGrid::Meeting on, off;
};
Needs NeedsOf(const LayoutFacts& from, const Region& want, int64_t local,
              const NodeSources* sources, int64_t device, std::vector<const Region*>& seen) {
  Needs needs;
  needs.off = from.grid->Meet(want);
  seen.clear();  // the distinct cells of the node: one per slice
  const bool shared_cells = from.grid->UniformHolders() != 1;
  const auto take = [&](int64_t s, RegionGrid::Meeting* into) {
    const Region& cell = from.regions[s];
    if (shared_cells) {
      for (const Region* other : seen) {
        if (*other == cell) return;
      }
      seen.push_back(&cell);
    }
    const int64_t numel = want.IntersectNumel(cell);
    if (numel == 0) return;
    needs.off.cells -= 1;
    needs.off.numel -= numel;
    if (into) {
      into->cells += 1;
      into->numel += numel;
    }
  };
  if (local >= 0) take(local, nullptr);
  if (sources) {
    sources->ForEach(device, [&](int64_t s) {
      if (s != local) take(s, &needs.on);
    });
  }
  return needs;
}

// The sending side: a cell held by h devices and wanted by d destinations (those holding it
// aside) keeps at least one holder sending d / h of its messages and bytes. Needs a target
// whose slices are held alike (`copies` devices each); else 0.
double SendingBound(const StepContext& ctx, const LayoutFacts& from, const LayoutFacts& to) {
  const int64_t copies = to.grid->UniformHolders(), holders = from.grid->UniformHolders();
  if (copies == 0 || holders == 0) return 0;
  double slowest = 0;
  for (const Region& cell : from.regions) {
    if (cell.empty()) continue;
    const RegionGrid::Meeting meeting = to.grid->Meet(cell);
    const double messages = static_cast<double>(meeting.cells * copies - holders);
    const double numel = static_cast<double>(meeting.numel * copies - holders * cell.numel());
    if (messages <= 0 || numel <= 0) continue;
    const auto share = [&](double total) { return static_cast<int64_t>(total / holders); };
    slowest = std::max(slowest, ctx.cost_model.FastestMessagesTime(
                                    share(messages), share(numel) * DTypeSize(ctx.dtype)));
  }
  return slowest;
}

}  // namespace

double SendRecvLowerBound(const StepContext& ctx, const LayoutFacts& from, const LayoutFacts& to,
                          const std::vector<int64_t>& local, double stop_above) {
  if (from.partial || to.partial) return 0;
  const int64_t node_size = ctx.cost_model.NodeSize();
  const int64_t size = DTypeSize(ctx.dtype);
  std::optional<NodeSources> sources;
  if (node_size > 0) sources.emplace(from.layout.placement, node_size);
  std::vector<const Region*> seen;
  double slowest = 0;
  for (size_t j = 0; j < to.regions.size() && slowest <= stop_above; ++j) {
    const int64_t device = to.layout.placement.device(static_cast<int64_t>(j)).index;
    const Needs needs =
        NeedsOf(from, to.regions[j], local[j], sources ? &*sources : nullptr, device, seen);
    // Without node structure every message may take the fastest link.
    const double off =
        node_size > 0 ? ctx.cost_model.InterNodeTime(needs.off.cells, needs.off.numel * size)
                      : ctx.cost_model.FastestMessagesTime(needs.off.cells, needs.off.numel * size);
    slowest = std::max(
        slowest, off + ctx.cost_model.FastestMessagesTime(needs.on.cells, needs.on.numel * size));
  }
  return slowest > stop_above ? slowest : std::max(slowest, SendingBound(ctx, from, to));
}

std::optional<BoxingStep> SendRecvClosedForm(const StepContext& ctx, const LayoutFacts& from,
                                             const LayoutFacts& to,
                                             const std::vector<int64_t>& local) {
  const int64_t node_size = ctx.cost_model.NodeSize();
  if (node_size <= 0 || from.grid->UniformHolders() != 1) return std::nullopt;
  const RegionGrid& source = *from.grid;
  const RegionGrid& target = *to.grid;
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
  const NodeSources sources(src, node_size);
  for (int64_t j = 0; j < dst.size(); ++j) {
    sources.ForEach(dst.device(j).index, [&](int64_t s) {
      const int64_t numel = to.regions[j].IntersectNumel(from.regions[s]);
      if (numel == 0) return;
      received[j].cells -= 1;
      received[j].numel -= numel;
      sent[s].cells -= 1;
      sent[s].numel -= numel;
      if (s == local[j]) return;  // already there
      const int64_t bytes = numel * size;
      const double time = ctx.cost_model.MessageTime(src.device(s), dst.device(j), bytes);
      send_time[s] += time;
      receive_time[j] += time;
      step.link_bytes[ctx.cost_model.Classify(src.device(s), dst.device(j))] += bytes;
    });
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
