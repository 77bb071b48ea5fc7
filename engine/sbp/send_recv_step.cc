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

  // Calls fn(cell, holders) for every grid cell meeting `target`, in row-major cell order;
  // Piece(cell, target) is the part of target in that cell. Nothing is allocated per cell.
  template <typename Fn>
  void ForEachCell(const Region& target, Fn fn) const {
    const int rank = target.rank();
    runs_.resize(rank);
    for (int k = 0; k < rank; ++k) {
      const auto& ranges = axis_ranges_[k];
      const Range want = target.ranges[k];
      auto first = std::partition_point(ranges.begin(), ranges.end(),
                                        [&](const Range& r) { return r.end <= want.begin; });
      auto last = std::partition_point(first, ranges.end(),
                                       [&](const Range& r) { return r.begin < want.end; });
      runs_[k] = {first - ranges.begin(), last - ranges.begin()};
      if (runs_[k].first == runs_[k].second) return;
    }
    cell_.resize(rank);
    for (int k = 0; k < rank; ++k) cell_[k] = runs_[k].first;
    while (true) {
      int64_t flat = 0;
      for (int k = 0; k < rank; ++k) flat += strides_[k] * static_cast<int64_t>(cell_[k]);
      fn(cell_, holders_[flat]);
      int k = rank - 1;
      for (; k >= 0; --k) {
        if (++cell_[k] < runs_[k].second) break;
        cell_[k] = runs_[k].first;
      }
      if (k < 0) return;
    }
  }

  int64_t PieceNumel(const std::vector<size_t>& cell, const Region& target) const {
    int64_t n = 1;
    for (size_t k = 0; k < cell.size(); ++k) {
      const Range r = axis_ranges_[k][cell[k]];
      n *= std::max<int64_t>(
          0, std::min(r.end, target.ranges[k].end) - std::max(r.begin, target.ranges[k].begin));
    }
    return n;
  }

  Region Piece(const std::vector<size_t>& cell, const Region& target) const {
    Region piece;
    for (size_t k = 0; k < cell.size(); ++k) piece.ranges.push_back(axis_ranges_[k][cell[k]]);
    return piece.Intersect(target);
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
  mutable std::vector<std::pair<size_t, size_t>> runs_;  // scratch for ForEachCell
  mutable std::vector<size_t> cell_;
};

}  // namespace

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
}  // namespace

double SendRecvLowerBound(const StepContext& ctx, const LayoutFacts& from, const LayoutFacts& to,
                          const std::vector<int64_t>& local) {
  if (from.partial || to.partial) return 0;
  int64_t most = 0;
  for (size_t j = 0; j < to.regions.size(); ++j) {
    int64_t missing = to.regions[j].numel();
    if (local[j] >= 0 && !from.partial) {
      missing -= to.regions[j].IntersectNumel(from.regions[local[j]]);
    }
    most = std::max(most, missing);
  }
  return ctx.cost_model.FastestMessageTime(most * DTypeSize(ctx.dtype));
}

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
  const SourceGrid grid(from);
  std::vector<double> send_time(src.size(), 0.0), receive_time(dst.size(), 0.0);
  for (int64_t j = 0; j < dst.size(); ++j) {
    const DeviceId dst_device = dst.device(j);
    int64_t piece_number = 0;
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
        // Candidates: the holders from the first at or after parallel index j + piece_number,
        // cyclically, so that destinations a whole number of data-parallel replicas apart
        // choose alike, relative to themselves (a folded Plan's copies send as copy 0 does,
        // compiler.md#folding), and successive pieces and destinations start at different
        // holders; of the window, the fastest link wins, the first on a tie.
        const int64_t want = (j + piece_number) % src.size();
        const size_t window = std::min(holders.size(), kHolderWindow);
        const size_t start =
            static_cast<size_t>(std::lower_bound(holders.begin(), holders.end(), want) -
                                holders.begin()) %
            holders.size();
        for (size_t w = 0; w < window; ++w) {
          const int64_t h = holders[(start + w) % holders.size()];
          const double time = ctx.cost_model.MessageTime(src.device(h), dst_device, bytes);
          if (chosen < 0 || time < chosen_time) {
            chosen = h;
            chosen_time = time;
          }
        }
        send_time[chosen] += chosen_time;
        receive_time[j] += chosen_time;
        step.link_bytes[ctx.cost_model.Classify(src.device(chosen), dst_device)] += bytes;
      }
      ++piece_number;
      if (with_transfers) {
        step.transfers.push_back(RegionTransfer{chosen, j, grid.Piece(cell, to.regions[j]), bytes});
      }
    });
  }
  for (double t : send_time) step.time = std::max(step.time, t);
  for (double t : receive_time) step.time = std::max(step.time, t);
  return step;
}

}  // namespace twinflow::sbp
