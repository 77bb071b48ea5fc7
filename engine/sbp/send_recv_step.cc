// SendRecvStep: the general redistribution between two non-partial layouts on any
// placements, as point-to-point copies of the intersections of source and destination slices.
#include <algorithm>
#include <map>

#include "engine/core/error.h"
#include "engine/sbp/boxing_steps.h"

namespace twinflow::sbp {
namespace {

// The source slices form a grid: along each tensor axis the non-empty ranges devices hold are
// disjoint, so a destination slice meets a product of per-axis runs of them, found by binary
// search. Each grid cell lists the devices holding it (more than one under Broadcast).
class SourceGrid {
 public:
  SourceGrid(const LayoutFacts& source) {
    const int rank = source.regions.empty() ? 0 : source.regions[0].rank();
    axis_ranges_.resize(rank);
    for (const Region& region : source.regions) {
      if (region.empty()) continue;
      for (int k = 0; k < rank; ++k) axis_ranges_[k].push_back(region.ranges[k]);
    }
    int64_t cells = 1;
    strides_.assign(rank, 1);
    for (int k = rank - 1; k >= 0; --k) {
      auto& ranges = axis_ranges_[k];
      std::sort(ranges.begin(), ranges.end(),
                [](const Range& a, const Range& b) { return a.begin < b.begin; });
      ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
      strides_[k] = cells;
      cells *= static_cast<int64_t>(ranges.size());
    }
    holders_.resize(cells);
    for (size_t s = 0; s < source.regions.size(); ++s) {
      const Region& region = source.regions[s];
      if (region.empty()) continue;
      int64_t cell = 0;
      for (int k = 0; k < rank; ++k) cell += strides_[k] * IndexOf(k, region.ranges[k]);
      holders_[cell].push_back(static_cast<int64_t>(s));
    }
  }

  // Calls fn(piece, holders) for every grid cell meeting `target`, in row-major cell order.
  template <typename Fn>
  void ForEachPiece(const Region& target, Fn fn) const {
    const int rank = target.rank();
    std::vector<std::pair<size_t, size_t>> runs(rank);  // [first, last) cell index per axis
    for (int k = 0; k < rank; ++k) {
      const auto& ranges = axis_ranges_[k];
      const Range want = target.ranges[k];
      auto first = std::partition_point(ranges.begin(), ranges.end(),
                                        [&](const Range& r) { return r.end <= want.begin; });
      auto last = std::partition_point(first, ranges.end(),
                                       [&](const Range& r) { return r.begin < want.end; });
      runs[k] = {first - ranges.begin(), last - ranges.begin()};
      if (runs[k].first == runs[k].second) return;
    }
    std::vector<size_t> index(rank);
    for (int k = 0; k < rank; ++k) index[k] = runs[k].first;
    while (true) {
      Region piece;
      int64_t cell = 0;
      for (int k = 0; k < rank; ++k) {
        piece.ranges.push_back(axis_ranges_[k][index[k]]);
        cell += strides_[k] * static_cast<int64_t>(index[k]);
      }
      fn(piece.Intersect(target), holders_[cell]);
      int k = rank - 1;
      for (; k >= 0; --k) {
        if (++index[k] < runs[k].second) break;
        index[k] = runs[k].first;
      }
      if (k < 0) return;
    }
  }

 private:
  int64_t IndexOf(int axis, const Range& range) const {
    const auto& ranges = axis_ranges_[axis];
    return std::lower_bound(ranges.begin(), ranges.end(), range,
                            [](const Range& a, const Range& b) { return a.begin < b.begin; }) -
           ranges.begin();
  }

  std::vector<std::vector<Range>> axis_ranges_;
  std::vector<int64_t> strides_;
  std::vector<std::vector<int64_t>> holders_;
};

}  // namespace

std::optional<BoxingStep> SendRecvStep(const StepContext& ctx, const LayoutFacts& from,
                                       const LayoutFacts& to) {
  if (from.partial || to.partial || from.layout == to.layout) return std::nullopt;
  const Placement& src = from.layout.placement;
  const Placement& dst = to.layout.placement;
  std::map<DeviceId, int64_t> src_index;
  for (int64_t s = 0; s < src.size(); ++s) src_index[src.device(s)] = s;

  BoxingStep step;
  step.kind = BoxingStepKind::kSendRecv;
  step.from = from.layout;
  step.to = to.layout;
  const SourceGrid grid(from);
  std::vector<double> load(src.size(), 0.0);  // seconds of sending assigned to each source
  std::vector<Transfer> priced;
  for (int64_t j = 0; j < dst.size(); ++j) {
    const DeviceId dst_device = dst.device(j);
    const auto local = src_index.find(dst_device);
    grid.ForEachPiece(to.regions[j], [&](const Region& piece,
                                         const std::vector<int64_t>& holders) {
      if (piece.empty()) return;
      if (holders.empty()) {
        throw SbpError("boxing: no device of " + src.ToString() + " holds " + piece.ToString());
      }
      const int64_t bytes = piece.numel() * DTypeSize(ctx.dtype);
      int64_t chosen = -1;
      if (local != src_index.end() &&
          std::find(holders.begin(), holders.end(), local->second) != holders.end()) {
        chosen = local->second;
      } else {
        double best = 0;
        for (int64_t h : holders) {
          const double finish =
              load[h] + ctx.cost_model.TransferTime({Transfer{src.device(h), dst_device, bytes}});
          if (chosen < 0 || finish < best) {
            chosen = h;
            best = finish;
          }
        }
        load[chosen] = best;
      }
      step.transfers.push_back(RegionTransfer{chosen, j, piece, bytes});
      priced.push_back(Transfer{src.device(chosen), dst_device, bytes});
    });
  }
  step.time = ctx.cost_model.TransferTime(priced);
  step.link_bytes = ctx.cost_model.TransferLinkBytes(priced);
  return step;
}

}  // namespace twinflow::sbp
