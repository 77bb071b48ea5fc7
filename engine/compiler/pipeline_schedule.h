#pragma once
// The 1F1B pipeline schedules as each pipeline rank runs them: the order of its micro-steps
// (one chunk's forward or backward of one micro-batch) in a training step. Megatron-LM's
// shapes (Narayanan et al. 2021, section 2.2):
//
// - 1F1B (one chunk per rank): rank r runs min(m, P - r - 1) forwards to fill the pipeline,
//   then alternates one forward and one backward, then drains the remaining backwards.
// - Interleaved 1F1B (V chunks per rank, `vp=V`): rank r holds virtual stages r, r + P, ...,
//   r + (V - 1) P (chunk c is virtual stage c P + r). Forwards go through the chunks in groups
//   of P micro-batches (chunk 0 on micro-batches 0..P-1, chunk 1 on the same, ..., then chunk 0
//   on P..2P-1), backwards the same with the chunks reversed. The warm-up is
//   (P - r - 1) * 2 + (V - 1) * P forwards (every forward when m == P), then 1F1B, then the
//   remaining backwards. It needs m to be a multiple of P.
//
// The bubble shrinks from (P - 1) / m of the ideal step to (P - 1) / (V m): the pipeline
// fills and drains in chunks V times smaller.
//
// - ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism"; one chunk per rank): the
//   backward is split into B (the input gradients the previous rank waits for) and W (the
//   weight gradients, which nothing downstream waits for). Rank r runs 1F1B's warm-up and
//   F, B pairs, but its W passes run r micro-batches late, so that in the drain, where 1F1B
//   waits for the next rank's B, rank r runs its delayed W passes instead. Every rank then keeps
//   at most P micro-batches' activations (those of 1F1B's first rank), and with F, B and W
//   times f, b, w (w <= f, w <= b) and m >= P a step takes m (f + b + w) + (P - 1)(f + b - w)
//   where 1F1B takes (m + P - 1)(f + b + w).
#include <cstdint>
#include <vector>

#include "engine/parallel/schedule.h"

namespace twinflow::compiler {

// kBackward is the whole backward pass, or under ZB-H1 its input gradients (B); kWeight the
// weight gradients (W).
enum class StepKind { kForward, kBackward, kWeight };

struct MicroStep {
  int chunk = 0;  // the rank's chunk: virtual stage chunk * ranks + rank
  StepKind kind = StepKind::kForward;
  int64_t micro_batch = 0;
};

// Rank `rank`'s micro-steps in order, 2 * chunks * micro_batches of them. Throws PlanError when
// the numbers are out of range, or chunks > 1 and micro_batches is not a multiple of ranks.
std::vector<MicroStep> PipelineSequence(int ranks, int chunks, int64_t micro_batches, int rank);

// ZB-H1's order for rank `rank` (one chunk): 3 * micro_batches micro-steps. PlanError for
// numbers out of range.
std::vector<MicroStep> ZeroBubbleSequence(int ranks, int64_t micro_batches, int rank);

// Rank `rank`'s sequence under the schedule the lowering orders by: ZB-H1's (one chunk), else
// (interleaved) 1F1B's.
std::vector<MicroStep> RankSequence(parallel::Schedule schedule, int ranks, int chunks,
                                    int64_t micro_batches, int rank);

// Per chunk of `sequence` (for `chunks` chunks): the most micro-batches between the start of
// their forward and the end of their last backward step (W where there are W steps) at once,
// the pieces that chunk's activations must be kept for.
std::vector<int64_t> MicroBatchesInFlight(const std::vector<MicroStep>& sequence, int chunks);

// Per chunk of pipeline rank `rank`: how many micro-batches its per-micro-batch registers let
// it run ahead (their slots, slot_counts.h rule 4). Every micro-batch without a 1F1B order
// (GPipe) or with one micro-batch; else MicroBatchesInFlight of its RankSequence.
std::vector<int64_t> MicroBatchesAhead(parallel::Schedule schedule, int ranks, int chunks,
                                       int64_t micro_batches, int rank);

}  // namespace twinflow::compiler
