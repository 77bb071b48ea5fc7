// SendRecvStep: the general redistribution between two non-partial layouts on any
// placements, as point-to-point copies of the intersections of source and destination slices.
#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "engine/core/error.h"
#include "engine/sbp/boxing_steps.h"
#include "engine/sbp/region_grid.h"
#include "engine/sbp/send_recv_closed_form.h"

namespace twinflow::sbp {

std::vector<int64_t> SourceIndexOfDestinations(const Placement& src, const Placement& dst) {
  std::map<DeviceId, int64_t> index;
  for (int64_t s = 0; s < src.size(); ++s) index[src.device(s)] = s;
  std::vector<int64_t> result(dst.size(), -1);
  for (int64_t j = 0; j < dst.size(); ++j) {
    const auto it = index.find(dst.device(j));
    if (it != index.end()) result[j] = it->second;
  }
  return result;
}

namespace {
// Replicated pieces: look at this many holders, starting round-robin, for the cheapest.
constexpr size_t kHolderWindow = 16;

// Of the window of holders from holders[start] on, cyclically, the one with the fastest
// message to a destination, the first on a tie, and that message's time.
class HolderChooser {
 public:
  // `ctx` and `src` must outlive the chooser (one SendRecvStep).
  HolderChooser(const StepContext& ctx, const Placement& src)
      : ctx_(ctx), src_(src), node_size_(src.ids_ascend() ? ctx.cost_model.NodeSize() : 0) {}

  std::pair<int64_t, double> Choose(const std::vector<int64_t>& holders, size_t start,
                                    const DeviceId& dst, int64_t bytes) const {
    return node_size_ > 0 ? ByNode(holders, start, dst, bytes)
                          : PricingEach(holders, start, dst, bytes);
  }

 private:
  std::pair<int64_t, double> PricingEach(const std::vector<int64_t>& holders, size_t start,
                                         const DeviceId& dst, int64_t bytes) const {
    const size_t window = std::min(holders.size(), kHolderWindow);
    int64_t chosen = -1;
    double chosen_time = 0;
    for (size_t w = 0; w < window; ++w) {
      const int64_t h = holders[(start + w) % holders.size()];
      const double time = ctx_.cost_model.MessageTime(src_.device(h), dst, bytes);
      if (chosen < 0 || time < chosen_time) {
        chosen = h;
        chosen_time = time;
      }
    }
    return {chosen, chosen_time};
  }

  // The cost model prices every message within a node alike, and every one across nodes alike
  // (CostModel::NodeSize), and the source's device ids ascend: the holders on dst's node are
  // one run of `holders`, so the choice is the first holder of the window on that run or off
  // it, whichever is faster (the earlier on a tie). The same choice as PricingEach, found with
  // two binary searches instead of a window of prices.
  std::pair<int64_t, double> ByNode(const std::vector<int64_t>& holders, size_t start,
                                    const DeviceId& dst, int64_t bytes) const {
    const size_t n = holders.size();
    const size_t window = std::min(n, kHolderWindow);
    const int64_t first_id = dst.index / node_size_ * node_size_;
    const auto below = [&](int64_t id) {
      return static_cast<size_t>(
          std::partition_point(holders.begin(), holders.end(),
                               [&](int64_t h) { return src_.device(h).index < id; }) -
          holders.begin());
    };
    const size_t lo = below(first_id), hi = below(first_id + node_size_);
    const bool start_on = start >= lo && start < hi;
    // Positions in window order (offsets from start); n: none. Both below n: no division
    // (this runs once a piece, a million times a 1,024-device search).
    const auto wrap = [n](size_t i) { return i >= n ? i - n : i; };
    const auto offset = [&](size_t position) { return wrap(position + n - start); };
    const size_t on = lo == hi ? n : (start_on ? 0 : offset(lo));
    const size_t off = !start_on ? 0 : hi < n ? offset(hi) : lo > 0 ? offset(0) : n;
    const auto priced = [&](size_t w) {
      const int64_t h = holders[wrap(start + w)];
      return std::make_pair(h, ctx_.cost_model.MessageTime(src_.device(h), dst, bytes));
    };
    if (off >= window) return priced(on);
    if (on >= window) return priced(off);
    const auto near = priced(on), far = priced(off);
    if (near.second != far.second) return near.second < far.second ? near : far;
    return on < off ? near : far;
  }

  const StepContext& ctx_;
  const Placement& src_;
  int64_t node_size_;  // 0: price each holder of the window
};
}  // namespace

std::optional<BoxingStep> SendRecvStep(const StepContext& ctx, const LayoutFacts& from,
                                       const LayoutFacts& to, const std::vector<int64_t>& local,
                                       bool with_transfers) {
  if (from.partial || to.partial || from.layout == to.layout) return std::nullopt;
  const Placement& src = from.layout.placement;
  const Placement& dst = to.layout.placement;

  BoxingStep step;
  step.kind = BoxingStepKind::kSendRecv;
  step.from = from.layout;
  step.to = to.layout;
  if (!with_transfers) {
    if (auto priced = SendRecvClosedForm(ctx, from, to, local)) return priced;
  }
  const RegionGrid& grid = *from.grid;
  const HolderChooser chooser(ctx, src);
  LinkClass last_link = LinkClass::kSameDevice;
  int64_t last_bytes = 0;  // on last_link since it was last added in: most pieces repeat it
  std::vector<double> send_time(src.size(), 0.0), receive_time(dst.size(), 0.0);
  for (int64_t j = 0; j < dst.size(); ++j) {
    const DeviceId dst_device = dst.device(j);
    // (j + pieces so far) mod the source's devices, kept without dividing per piece.
    int64_t want = j % src.size();
    grid.ForEachCell(to.regions[j], [&](const std::vector<size_t>& cell,
                                        const std::vector<int64_t>& holders) {
      const int64_t numel = grid.PieceNumel(cell, to.regions[j]);
      if (numel == 0) return;
      if (holders.empty()) {
        throw SbpError("boxing: no device of " + src.ToString() + " holds " +
                       grid.Piece(cell, to.regions[j]).ToString());
      }
      const int64_t bytes = numel * DTypeSize(ctx.dtype);
      int64_t chosen = -1;
      double chosen_time = 0;
      if (local[j] >= 0 && std::binary_search(holders.begin(), holders.end(), local[j])) {
        chosen = local[j];
      } else {
        // Candidates: the holders from the first at or after parallel index `want`,
        // cyclically, so that destinations a whole number of data-parallel replicas apart
        // choose alike, relative to themselves (a folded Plan's copies send as copy 0 does,
        // compiler.md#folding), and successive pieces and destinations start at different
        // holders; of the window, the fastest link wins, the first on a tie.
        size_t start = static_cast<size_t>(std::lower_bound(holders.begin(), holders.end(), want) -
                                           holders.begin());
        if (start == holders.size()) start = 0;
        std::tie(chosen, chosen_time) = chooser.Choose(holders, start, dst_device, bytes);
        send_time[chosen] += chosen_time;
        receive_time[j] += chosen_time;
        const LinkClass link = ctx.cost_model.Classify(src.device(chosen), dst_device);
        if (link != last_link) {
          if (last_bytes > 0) step.link_bytes[last_link] += last_bytes;
          last_link = link;
          last_bytes = 0;
        }
        last_bytes += bytes;
      }
      if (++want == src.size()) want = 0;
      if (with_transfers) {
        step.transfers.push_back(RegionTransfer{chosen, j, grid.Piece(cell, to.regions[j]), bytes});
      }
    });
  }
  if (last_bytes > 0) step.link_bytes[last_link] += last_bytes;
  for (double t : send_time) step.time = std::max(step.time, t);
  for (double t : receive_time) step.time = std::max(step.time, t);
  return step;
}

}  // namespace twinflow::sbp
