#pragma once
// Proxy estimates for `twinflow tune`: a candidate of a layered model (gpt, llama) is compiled
// and simulated on four smaller models of the same strategy, with k1 < k2 layers per pipeline
// chunk and m1 < m2 micro-batches of the candidate's own micro-batch size, and its step time read
// off the bilinear form a + b k + c m + d k m through them; its arena off the line through (k1, m2)
// and (k2, m2).
//
// Why the step is bilinear in (k, m): every layer of a chunk repeats the same acts, and in a
// pipeline's steady state (m at least the stages' warm-up) every micro-batch repeats the same
// acts per layer, so the step is a fixed part (embedding, head, optimizer, the exposed
// gradient sync) plus parts linear in the layers, in the micro-batches and in their product.
// Measured on Llama-3-8B over 64 H100s (2026-12-08): 130 candidates within -0.69% and +0.04%
// of their whole models' simulations. The arena is near-linear in the layers, but the memory
// plan's packing adds up to 3% over the line at 8 layers per chunk (same runs); so only an
// estimate clearly inside or outside the device's usable bytes decides, and the rest are
// compiled whole.
// The tuner re-simulates the top of the ranking on whole models before it prints.
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/parallel/strategy.h"
#include "models/model.h"

namespace twinflow::planner {

// The extent a candidate's model is built with instead of its own (0: its own).
struct ModelExtent {
  int64_t layers = 0;
  int64_t batch = 0;  // the global batch
};
// Builds a candidate's model at `extent` (the tune's front end: its flags with these).
using ProxyBuilder =
    std::function<models::BuiltModel(const parallel::Strategy&, const ModelExtent&)>;

// The four proxies of a candidate, or none (`usable` false) where they would not be smaller
// than its model or the forms do not hold: the layers not a whole number of chunks' worth,
// at most k2 layers per chunk, or at most m2 micro-batches.
struct ProxyPlan {
  bool usable = false;
  int64_t layers_per_chunk = 0;   // the candidate's K
  std::array<int64_t, 2> k{};     // layers per chunk of the proxies
  std::array<int64_t, 2> m{};     // their micro-batches
  int64_t chunks = 1;             // pp x vp
  int64_t samples_per_micro = 0;  // the global batch of one micro-batch (dp x its size)

  // The proxy (i over k, j over m): its strategy and extent.
  parallel::Strategy Strategy(const parallel::Strategy& candidate, int j) const;
  ModelExtent Extent(int i, int j) const;
};
ProxyPlan PlanProxies(const parallel::Strategy& candidate, int64_t layers, int64_t batch);

// A figure of the four proxies, [i over k][j over m].
using ProxyValues = std::array<std::array<double, 2>, 2>;
// The candidate's: the bilinear form through the four at (K, its micro-batches). For the step
// and the flops of a step (exactly bilinear: a sum of the ops' flops).
double Bilinear(const ProxyPlan& plan, const ProxyValues& values, int64_t micro_batches);
// Its largest arena: each device's line through its arenas at (k1, m2) and (k2, m2) (by Plan
// device, alike in both: the strategy is), at K. Per device, since the fullest may change: a
// pipeline's last stage, holding the head, is the fullest of a small proxy, and its first,
// holding the most micro-batches' activations, of the whole model (measured: 4 stages of
// Llama-3-8B, 56.6 GiB from the proxies' largest against 107.7 GiB).
int64_t EstimatedArena(const ProxyPlan& plan, const std::vector<int64_t>& at_k1,
                       const std::vector<int64_t>& at_k2);

// How an estimated arena compares with the usable bytes: clearly fits, clearly does not, or too
// close to tell (within the packing's few percent: compile the whole model).
enum class ArenaCall { kFits, kOutOfMemory, kUnsure };
ArenaCall CallArena(int64_t estimated, int64_t usable);

}  // namespace twinflow::planner
