#include "engine/sbp/region_grid.h"

#include <algorithm>

namespace twinflow::sbp {
namespace {

bool BeginsBefore(const Range& a, const Range& b) { return a.begin < b.begin; }

int64_t Overlap(const Range& a, const Range& b) {
  return std::max<int64_t>(0, std::min(a.end, b.end) - std::max(a.begin, b.begin));
}

}  // namespace

RegionGrid::RegionGrid(const std::vector<Region>& regions) {
  const int rank = regions.empty() ? 0 : regions[0].rank();
  axis_ranges_.resize(rank);
  for (const Region& region : regions) {
    if (region.empty()) continue;
    for (int k = 0; k < rank; ++k) axis_ranges_[k].push_back(region.ranges[k]);
  }
  int64_t cells = 1;
  strides_.assign(rank, 1);
  axis_prefix_.resize(rank);
  for (int k = rank - 1; k >= 0; --k) {
    auto& ranges = axis_ranges_[k];
    std::sort(ranges.begin(), ranges.end(), BeginsBefore);
    ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
    strides_[k] = cells;
    cells *= static_cast<int64_t>(ranges.size());
    axis_prefix_[k].assign(1, 0);
    for (const Range& r : ranges) axis_prefix_[k].push_back(axis_prefix_[k].back() + r.size());
  }
  holders_.resize(cells);
  for (size_t s = 0; s < regions.size(); ++s) {
    const Region& region = regions[s];
    if (region.empty()) continue;
    int64_t cell = 0;
    for (int k = 0; k < rank; ++k) cell += strides_[k] * IndexOf(k, region.ranges[k]);
    holders_[cell].push_back(static_cast<int64_t>(s));
  }
  uniform_holders_ = holders_.empty() ? 0 : static_cast<int64_t>(holders_[0].size());
  for (const auto& holders : holders_) {
    if (static_cast<int64_t>(holders.size()) != uniform_holders_) uniform_holders_ = 0;
  }
}

int64_t RegionGrid::IndexOf(int axis, const Range& range) const {
  const auto& ranges = axis_ranges_[axis];
  return std::lower_bound(ranges.begin(), ranges.end(), range, BeginsBefore) - ranges.begin();
}

bool RegionGrid::FindRuns(const Region& target) const {
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
    if (runs_[k].first == runs_[k].second) return false;
  }
  return true;
}

RegionGrid::Meeting RegionGrid::Meet(const Region& target) const {
  // A non-empty target's runs hold only ranges it overlaps; an empty one meets nothing.
  if (target.empty() || !FindRuns(target)) return {};
  Meeting meeting{1, 1};
  for (size_t k = 0; k < runs_.size(); ++k) {
    const auto [first, last] = runs_[k];
    const auto& ranges = axis_ranges_[k];
    const Range want = target.ranges[k];
    // The ranges strictly inside a run lie wholly within the target: only its two ends clip.
    int64_t elements = Overlap(ranges[first], want);
    if (last - first > 1) {
      elements +=
          Overlap(ranges[last - 1], want) + axis_prefix_[k][last - 1] - axis_prefix_[k][first + 1];
    }
    meeting.cells *= static_cast<int64_t>(last - first);
    meeting.numel *= elements;
  }
  return meeting;
}

int64_t RegionGrid::PieceNumel(const std::vector<size_t>& cell, const Region& target) const {
  int64_t n = 1;
  for (size_t k = 0; k < cell.size(); ++k) n *= Overlap(axis_ranges_[k][cell[k]], target.ranges[k]);
  return n;
}

Region RegionGrid::Piece(const std::vector<size_t>& cell, const Region& target) const {
  Region piece;
  for (size_t k = 0; k < cell.size(); ++k) piece.ranges.push_back(axis_ranges_[k][cell[k]]);
  return piece.Intersect(target);
}

}  // namespace twinflow::sbp
