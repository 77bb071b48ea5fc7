#include "engine/compiler/pipeline_schedule.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace twinflow::compiler {
namespace {

// The k-th forward (or backward) of a rank: which chunk and micro-batch. Groups of `ranks`
// micro-batches go through every chunk before the next group starts.
MicroStep Nth(int64_t k, int ranks, int chunks, bool forward) {
  const int64_t group = static_cast<int64_t>(ranks) * chunks;
  const int in_group = static_cast<int>((k % group) / ranks);
  MicroStep step;
  step.chunk = forward ? in_group : chunks - 1 - in_group;
  step.kind = forward ? StepKind::kForward : StepKind::kBackward;
  step.micro_batch = (k / group) * ranks + k % ranks;
  return step;
}

void CheckShape(int ranks, int chunks, int64_t micro_batches, int rank) {
  if (ranks < 1 || chunks < 1 || micro_batches < 1 || rank < 0 || rank >= ranks) {
    throw PlanError("pipeline schedule: bad ranks " + std::to_string(ranks) + ", chunks " +
                    std::to_string(chunks) + ", micro-batches " + std::to_string(micro_batches) +
                    " or rank " + std::to_string(rank));
  }
}

}  // namespace

std::vector<MicroStep> PipelineSequence(int ranks, int chunks, int64_t micro_batches, int rank) {
  CheckShape(ranks, chunks, micro_batches, rank);
  if (chunks > 1 && micro_batches % ranks != 0) {
    throw PlanError("the interleaved pipeline schedule runs micro-batches in groups of the " +
                    std::to_string(ranks) + " pipeline ranks, but there are " +
                    std::to_string(micro_batches) + " micro-batches (mb must be a multiple of pp)");
  }
  const int64_t total = micro_batches * chunks;
  // With one chunk, k follows the micro-batches directly (a group of `ranks` is one chunk).
  const int group_ranks = chunks > 1 ? ranks : 1;
  int64_t warmup = 0;
  if (chunks == 1) {
    warmup = std::min<int64_t>(total, ranks - rank - 1);
  } else if (micro_batches == ranks) {
    warmup = total;  // Megatron: nothing to alternate; every forward, then every backward
  } else {
    warmup = std::min<int64_t>(total, (ranks - rank - 1) * 2 + (chunks - 1) * ranks);
  }
  std::vector<MicroStep> sequence;
  sequence.reserve(static_cast<size_t>(2 * total));
  for (int64_t k = 0; k < warmup; ++k) sequence.push_back(Nth(k, group_ranks, chunks, true));
  for (int64_t k = 0; k < total - warmup; ++k) {
    sequence.push_back(Nth(k + warmup, group_ranks, chunks, true));
    sequence.push_back(Nth(k, group_ranks, chunks, false));
  }
  for (int64_t k = total - warmup; k < total; ++k) {
    sequence.push_back(Nth(k, group_ranks, chunks, false));
  }
  return sequence;
}

std::vector<MicroStep> ZeroBubbleSequence(int ranks, int64_t micro_batches, int rank) {
  CheckShape(ranks, 1, micro_batches, rank);
  std::vector<MicroStep> sequence;
  int64_t forwards = 0, backwards = 0, weights = 0;
  auto add = [&](StepKind kind, int64_t& count) { sequence.push_back({0, kind, count++}); };
  // W passes run `rank` micro-batches behind the B passes, and all are done at the end.
  auto weights_due = [&] {
    while (weights < backwards - rank) add(StepKind::kWeight, weights);
  };
  const int64_t warmup = std::min<int64_t>(micro_batches, ranks - rank - 1);
  while (forwards < warmup) add(StepKind::kForward, forwards);
  while (backwards < micro_batches) {
    if (forwards < micro_batches) add(StepKind::kForward, forwards);
    add(StepKind::kBackward, backwards);
    weights_due();
  }
  while (weights < micro_batches) add(StepKind::kWeight, weights);
  return sequence;
}

std::vector<int64_t> MicroBatchesInFlight(const std::vector<MicroStep>& sequence, int chunks) {
  bool split = false;  // activations live until the W step where there are W steps
  for (const MicroStep& step : sequence) split = split || step.kind == StepKind::kWeight;
  const StepKind last = split ? StepKind::kWeight : StepKind::kBackward;
  std::vector<int64_t> live(static_cast<size_t>(chunks), 0), most(static_cast<size_t>(chunks), 0);
  for (const MicroStep& step : sequence) {
    const auto c = static_cast<size_t>(step.chunk);
    if (step.kind == StepKind::kForward) most.at(c) = std::max(most.at(c), ++live.at(c));
    if (step.kind == last) --live.at(c);
  }
  return most;
}

std::vector<int64_t> MicroBatchesAhead(parallel::Schedule schedule, int ranks, int chunks,
                                       int64_t micro_batches, int rank) {
  if (!parallel::InterleavesPasses(schedule) || micro_batches <= 1) {
    return std::vector<int64_t>(static_cast<size_t>(chunks), micro_batches);
  }
  return MicroBatchesInFlight(RankSequence(schedule, ranks, chunks, micro_batches, rank), chunks);
}

std::vector<MicroStep> RankSequence(parallel::Schedule schedule, int ranks, int chunks,
                                    int64_t micro_batches, int rank) {
  if (schedule == parallel::Schedule::kZeroBubbleH1) {
    return ZeroBubbleSequence(ranks, micro_batches, rank);
  }
  return PipelineSequence(ranks, chunks, micro_batches, rank);
}

}  // namespace twinflow::compiler
