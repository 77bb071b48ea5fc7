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
#include <cstdint>
#include <vector>

namespace twinflow::compiler {

struct MicroStep {
  int chunk = 0;  // the rank's chunk: virtual stage chunk * ranks + rank
  bool forward = true;
  int64_t micro_batch = 0;
};

// Rank `rank`'s micro-steps in order, 2 * chunks * micro_batches of them. Throws PlanError when
// the numbers are out of range, or chunks > 1 and micro_batches is not a multiple of ranks.
std::vector<MicroStep> PipelineSequence(int ranks, int chunks, int64_t micro_batches, int rank);

// Per chunk of `sequence` (for `chunks` chunks): the most micro-batches between the start of
// their forward and the end of their backward at once, the pieces that chunk's activations
// must be kept for.
std::vector<int64_t> MicroBatchesInFlight(const std::vector<MicroStep>& sequence, int chunks);

}  // namespace twinflow::compiler
