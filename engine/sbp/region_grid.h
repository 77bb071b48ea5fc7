#pragma once
// RegionGrid: the slices of one non-partial layout as a grid. Along each tensor axis the
// non-empty ranges its devices hold are disjoint, so every slice is one cell of the product of
// those per-axis ranges, and the cells a region meets are a product of per-axis runs, found by
// binary search. Each cell lists its holders: the parallel indices holding it (more than one
// under Broadcast). Send-recv boxing walks these cells (send_recv_step.cc) or sums over them
// in closed form (send_recv_closed_form.cc).
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/core/region.h"

namespace twinflow::sbp {

class RegionGrid {
 public:
  // `regions` by parallel index, as LayoutFacts::regions; empty ones hold no cell.
  explicit RegionGrid(const std::vector<Region>& regions);

  // Calls fn(cell, holders) for every grid cell meeting `target`, in row-major cell order;
  // Piece(cell, target) is the part of target in that cell. Nothing is allocated per cell.
  template <typename Fn>
  void ForEachCell(const Region& target, Fn fn) const {
    if (!FindRuns(target)) return;
    const int rank = target.rank();
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

  // The cells meeting `target` and the elements of target inside them, summed over those
  // cells without visiting them: the cells are a product of per-axis runs, so both sums are
  // products of per-axis sums.
  struct Meeting {
    int64_t cells = 0;
    int64_t numel = 0;
  };
  Meeting Meet(const Region& target) const;

  int64_t PieceNumel(const std::vector<size_t>& cell, const Region& target) const;
  Region Piece(const std::vector<size_t>& cell, const Region& target) const;

  // The number of holders every cell has, when all have the same number; else 0.
  int64_t UniformHolders() const { return uniform_holders_; }

 private:
  int64_t IndexOf(int axis, const Range& range) const;
  // Sets runs_ to the per-axis runs of ranges meeting `target`; false when one is empty.
  bool FindRuns(const Region& target) const;

  std::vector<std::vector<Range>> axis_ranges_;    // sorted, distinct
  std::vector<std::vector<int64_t>> axis_prefix_;  // axis_prefix_[k][i]: sizes of ranges < i
  std::vector<int64_t> strides_;
  std::vector<std::vector<int64_t>> holders_;
  int64_t uniform_holders_ = 0;
  mutable std::vector<std::pair<size_t, size_t>> runs_;  // scratch for ForEachCell and Meet
  mutable std::vector<size_t> cell_;
};

}  // namespace twinflow::sbp
