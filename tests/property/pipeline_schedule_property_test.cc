// Properties of the 1F1B schedules (engine/compiler/pipeline_schedule.h) over random pipeline
// shapes: each rank runs every micro-step of its chunks exactly once, in micro-batch order per
// chunk and pass, and the ranks' sequences together never deadlock. Run with any forward and
// backward times f and b, every rank doing one micro-step at a time and the data dependencies
// of a pipeline of P * V virtual stages, the step takes exactly (V m + P - 1)(f + b): the
// bubble is (P - 1)/(V m) of the ideal, the formula of Narayanan et al. 2021 (for V = 1, that
// of 1F1B). ZB-H1, with weight-gradient times w <= min(f, b) and m >= P, takes exactly
// m (f + b + w) + (P - 1)(f + b - w) (Qi et al. 2024) and keeps at most P micro-batches on any
// rank. The in-flight counts are the most micro-batches each chunk holds.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "engine/compiler/pipeline_schedule.h"
#include "engine/core/error.h"

namespace twinflow::compiler {
namespace {

using Item = std::tuple<int, StepKind, int64_t>;  // virtual stage, kind, micro-batch

// What a micro-step of virtual stage v waits for: the previous stage's forward, the next
// stage's input gradients, its own earlier passes.
std::vector<Item> Inputs(const MicroStep& s, int v, int stages) {
  std::vector<Item> inputs;
  if (s.kind == StepKind::kForward && v > 0) inputs.emplace_back(v - 1, s.kind, s.micro_batch);
  if (s.kind == StepKind::kBackward) {
    inputs.emplace_back(v, StepKind::kForward, s.micro_batch);
    if (v < stages - 1) inputs.emplace_back(v + 1, s.kind, s.micro_batch);
  }
  if (s.kind == StepKind::kWeight) inputs.emplace_back(v, StepKind::kBackward, s.micro_batch);
  return inputs;
}

// The step's length when every rank runs its sequence in order, each micro-step starting once
// the rank is free and its inputs are done (forward f, backward b, weight w); -1 on a deadlock.
int64_t Makespan(const std::vector<std::vector<MicroStep>>& sequences, int chunks, int64_t f,
                 int64_t b, int64_t w) {
  const auto ranks = static_cast<int>(sequences.size());
  const int stages = ranks * chunks;
  std::map<Item, int64_t> end;
  std::vector<int64_t> free(static_cast<size_t>(ranks), 0);
  std::vector<size_t> next(static_cast<size_t>(ranks), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < ranks; ++r) {
      for (; next[r] < sequences[r].size(); ++next[r]) {
        const MicroStep& s = sequences[r][next[r]];
        const int v = s.chunk * ranks + r;
        int64_t start = free[r];
        bool ready = true;
        for (const Item& in : Inputs(s, v, stages)) {
          const auto it = end.find(in);
          ready = ready && it != end.end();
          if (ready) start = std::max(start, it->second);
        }
        if (!ready) break;
        const int64_t time = s.kind == StepKind::kForward    ? f
                             : s.kind == StepKind::kBackward ? b
                                                             : w;
        free[r] = end[{v, s.kind, s.micro_batch}] = start + time;
        progress = true;
      }
    }
  }
  for (int r = 0; r < ranks; ++r) {
    if (next[r] < sequences[r].size()) return -1;
  }
  return *std::max_element(free.begin(), free.end());
}

int64_t Makespan(int ranks, int chunks, int64_t micro_batches, int64_t f, int64_t b) {
  std::vector<std::vector<MicroStep>> sequences;
  for (int r = 0; r < ranks; ++r) {
    sequences.push_back(PipelineSequence(ranks, chunks, micro_batches, r));
  }
  return Makespan(sequences, chunks, f, b, 0);
}

RC_GTEST_PROP(PipelineSchedule, EveryMicroStepOnceInOrder, ()) {
  const int ranks = *rc::gen::inRange(1, 7);
  const int chunks = *rc::gen::inRange(1, 5);
  const int64_t micro_batches =
      chunks > 1 ? ranks * *rc::gen::inRange(1, 5) : *rc::gen::inRange(1, 13);
  const int rank = *rc::gen::inRange(0, ranks);
  const std::vector<MicroStep> sequence = PipelineSequence(ranks, chunks, micro_batches, rank);
  RC_ASSERT(static_cast<int64_t>(sequence.size()) == 2 * chunks * micro_batches);
  std::map<std::pair<int, bool>, int64_t> expected;  // (chunk, forward?) -> next micro-batch
  std::map<std::pair<int, int64_t>, bool> forwarded;
  for (const MicroStep& s : sequence) {
    RC_ASSERT(s.chunk >= 0 && s.chunk < chunks);
    const std::pair<int, bool> pass(s.chunk, s.kind == StepKind::kForward);
    const std::pair<int, int64_t> piece(s.chunk, s.micro_batch);
    RC_ASSERT(s.kind != StepKind::kWeight);
    RC_ASSERT(s.micro_batch == expected[pass]++);
    if (s.kind == StepKind::kForward) forwarded[piece] = true;
    if (s.kind == StepKind::kBackward) RC_ASSERT(forwarded[piece]);
  }
  if (chunks == 1) {
    RC_ASSERT(MicroBatchesInFlight(sequence, 1)[0] ==
              std::min<int64_t>(micro_batches, ranks - rank));
  }
}

RC_GTEST_PROP(PipelineSchedule, TheBubbleIsTheFormulas, ()) {
  const int ranks = *rc::gen::inRange(1, 7);
  const int chunks = *rc::gen::inRange(1, 5);
  const int64_t micro_batches =
      chunks > 1 ? ranks * *rc::gen::inRange(1, 5) : *rc::gen::inRange(1, 13);
  const int64_t f = *rc::gen::inRange(1, 4);
  const int64_t b = f + *rc::gen::inRange(0, 4);
  RC_ASSERT(Makespan(ranks, chunks, micro_batches, f, b) ==
            (chunks * micro_batches + ranks - 1) * (f + b));
}

RC_GTEST_PROP(PipelineSchedule, ZeroBubbleH1KeepsPMicroBatchesAndShrinksTheBubble, ()) {
  const int ranks = *rc::gen::inRange(1, 8);
  const int64_t micro_batches = *rc::gen::inRange(1, 17);
  const int64_t f = *rc::gen::inRange(1, 4);
  const int64_t b = *rc::gen::inRange(1, 4);
  const int64_t w = *rc::gen::inRange(1, static_cast<int>(std::min(f, b)) + 1);
  std::vector<std::vector<MicroStep>> sequences;
  for (int r = 0; r < ranks; ++r) {
    sequences.push_back(ZeroBubbleSequence(ranks, micro_batches, r));
    std::map<StepKind, int64_t> next;  // each kind in micro-batch order, all of them
    for (const MicroStep& s : sequences.back()) RC_ASSERT(s.micro_batch == next[s.kind]++);
    for (StepKind kind : {StepKind::kForward, StepKind::kBackward, StepKind::kWeight}) {
      RC_ASSERT(next[kind] == micro_batches);
    }
    RC_ASSERT(MicroBatchesInFlight(sequences.back(), 1)[0] <=
              std::min<int64_t>(micro_batches, ranks));
  }
  const int64_t step = Makespan(sequences, 1, f, b, w);
  RC_ASSERT(step > 0);
  if (micro_batches >= ranks) {
    RC_ASSERT(step == micro_batches * (f + b + w) + (ranks - 1) * (f + b - w));
  }
}

TEST(PipelineSchedule, MegatronsInterleavedOrderOnTwoRanks) {
  // pp=2, vp=2, 4 micro-batches, rank 0: a warm-up of (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4
  // forwards, chunk 0 then chunk 1 on micro-batches 0 and 1, then 1F1B, backwards from chunk 1.
  const std::vector<MicroStep> got = PipelineSequence(2, 2, 4, 0);
  const std::vector<std::tuple<int, bool, int64_t>> want = {
      {0, true, 0},  {0, true, 1},  {1, true, 0},  {1, true, 1},  {0, true, 2}, {1, false, 0},
      {0, true, 3},  {1, false, 1}, {1, true, 2},  {0, false, 0}, {1, true, 3}, {0, false, 1},
      {1, false, 2}, {1, false, 3}, {0, false, 2}, {0, false, 3}};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const bool forward = got[i].kind == StepKind::kForward;
    EXPECT_EQ(std::make_tuple(got[i].chunk, forward, got[i].micro_batch), want[i]) << i;
  }
  EXPECT_EQ(MicroBatchesInFlight(got, 2), (std::vector<int64_t>{4, 2}));
}

TEST(PipelineSchedule, InterleavingNeedsMicroBatchesInGroupsOfTheRanks) {
  EXPECT_THROW(PipelineSequence(2, 2, 3, 0), PlanError);
  EXPECT_THROW(PipelineSequence(2, 1, 4, 2), PlanError);
  EXPECT_NO_THROW(PipelineSequence(2, 1, 3, 1));
}

}  // namespace
}  // namespace twinflow::compiler
