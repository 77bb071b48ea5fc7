#include "planner/proxy_estimate.h"

#include <algorithm>

namespace twinflow::planner {
namespace {

// The line through the packing's measured departures (proxy_estimate.h): an arena estimated
// within 5% under the usable bytes, or 3% over them, is compiled whole.
constexpr double kFitsBelow = 1 / 1.05;
constexpr double kOutOfMemoryAbove = 1.03;

}  // namespace

ProxyPlan PlanProxies(const parallel::Strategy& candidate, int64_t layers, int64_t batch) {
  ProxyPlan plan;
  if (candidate.automatic || layers < 1 || batch < 1) return plan;
  plan.chunks = candidate.stages();
  if (layers % plan.chunks != 0) return plan;
  plan.layers_per_chunk = layers / plan.chunks;
  plan.k = {1, 2};
  // In a pipeline, the stages' warm-up takes pp micro-batches (and the interleaved schedule
  // wants a multiple of pp); without one, two make the accumulation steady. Past the warm-up
  // the arena holds no more micro-batches' activations (measured flat from 2 or 4 to 32 on
  // Llama-3-8B, 2 and 4 stages), so the arena is read at m2 too.
  plan.m = candidate.pp > 1 ? std::array<int64_t, 2>{candidate.pp, 2 * candidate.pp}
                            : std::array<int64_t, 2>{2, 3};
  // GPipe runs every forward pass before any backward pass: its stages hold all the step's
  // micro-batches at once (measured: half the arena at 4 of 16), so m2 is the candidate's own.
  const bool gpipe = candidate.pp > 1 && candidate.schedule == parallel::Schedule::kGPipe;
  if (gpipe) plan.m[1] = candidate.micro_batches;
  const int64_t micro = candidate.micro_batches * candidate.dp;
  if (batch % micro != 0) return plan;
  plan.samples_per_micro = batch / micro * candidate.dp;
  plan.usable = plan.layers_per_chunk > plan.k[1] && plan.m[1] > plan.m[0] &&
                (gpipe || candidate.micro_batches > plan.m[1]);
  return plan;
}

parallel::Strategy ProxyPlan::Strategy(const parallel::Strategy& candidate, int j) const {
  parallel::Strategy proxy = candidate;
  proxy.micro_batches = m[static_cast<size_t>(j)];
  return proxy;
}

ModelExtent ProxyPlan::Extent(int i, int j) const {
  return {k[static_cast<size_t>(i)] * chunks, samples_per_micro * m[static_cast<size_t>(j)]};
}

double Bilinear(const ProxyPlan& plan, const ProxyValues& v, int64_t micro_batches) {
  const double dk = static_cast<double>(plan.k[1] - plan.k[0]);
  const double dm = static_cast<double>(plan.m[1] - plan.m[0]);
  const double x = static_cast<double>(plan.layers_per_chunk - plan.k[0]);
  const double y = static_cast<double>(micro_batches - plan.m[0]);
  const double b = (v[1][0] - v[0][0]) / dk;
  const double c = (v[0][1] - v[0][0]) / dm;
  const double d = (v[1][1] - v[1][0] - v[0][1] + v[0][0]) / (dk * dm);
  return v[0][0] + b * x + c * y + d * x * y;
}

int64_t EstimatedArena(const ProxyPlan& plan, const std::vector<int64_t>& at_k1,
                       const std::vector<int64_t>& at_k2) {
  const auto dk = static_cast<double>(plan.k[1] - plan.k[0]);
  const auto x = static_cast<double>(plan.layers_per_chunk - plan.k[0]);
  double largest = 0;
  for (size_t d = 0; d < at_k1.size() && d < at_k2.size(); ++d) {
    const auto a = static_cast<double>(at_k1[d]), b = static_cast<double>(at_k2[d]);
    largest = std::max(largest, a + (b - a) / dk * x);
  }
  return static_cast<int64_t>(largest);
}

ArenaCall CallArena(int64_t estimated, int64_t usable) {
  const auto e = static_cast<double>(estimated), u = static_cast<double>(usable);
  if (e <= u * kFitsBelow) return ArenaCall::kFits;
  if (e > u * kOutOfMemoryAbove) return ArenaCall::kOutOfMemory;
  return ArenaCall::kUnsure;
}

}  // namespace twinflow::planner
