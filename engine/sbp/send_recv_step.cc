// SendRecvStep: the general redistribution between two non-partial layouts on any
// placements, as point-to-point copies of the intersections of source and destination slices.
#include <algorithm>
#include <map>

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
  const RegionGrid grid(from.regions);
  if (!with_transfers) {
    if (auto priced = SendRecvClosedForm(ctx, from, to, grid, local)) return priced;
  }
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
