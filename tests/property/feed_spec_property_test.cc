// Each rank's local feed (engine/runtime/feed_spec.h) over random data-parallel layouts: ranks
// own consecutive devices, the devices split the batch rows (balanced, so possibly unevenly)
// or hold replicas of a split, over 1 to 3 micro-batches. The ranks' local values, micro-batch
// by micro-batch in rank order, are exactly the global batch; each covers every part its
// devices hold; and the runtime's check takes the local value and refuses the whole batch
// wherever the two differ.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/feed_spec.h"
#include "tests/unit/hand_built_plan.h"

namespace twinflow::runtime {
namespace {

using namespace hand_plan;  // NOLINT: test helpers

RC_GTEST_PROP(FeedSpecProperty, RanksLocalRowsTileTheGlobalBatch, ()) {
  const int ranks = *rc::gen::inRange(1, 5);
  const int per_rank = *rc::gen::inRange(1, 4);
  const int replicas = *rc::gen::arbitrary<bool>() ? per_rank : 1;  // divides per_rank
  const int devices = ranks * per_rank, splits = devices / replicas;
  const int64_t batch = *rc::gen::inRange<int64_t>(splits, 4 * splits + 3);
  const int64_t cols = *rc::gen::inRange<int64_t>(1, 4);
  const int64_t pieces = *rc::gen::inRange<int64_t>(1, 4);
  const Shape logical{batch, cols};

  PlanBuilder b(devices, pieces);
  plan::Binding* feed = b.Feed("x", logical);
  std::vector<std::vector<Region>> held(ranks);  // each rank's parts
  for (int d = 0; d < devices; ++d) {
    const Range rows = BalancedPart(Range{0, batch}, splits, d / replicas);
    const Region region = Rows(logical, rows.begin, rows.end);
    const int64_t src = b.Task(plan::SOURCE, d, "x@" + std::to_string(d), "input");
    PlanBuilder::Part(feed, b.Regst(src, {}, region.shape()), region);
    held[d / per_rank].push_back(region);
  }
  plan::Plan plan = b.Build();
  for (int d = 0; d < devices; ++d) plan.mutable_devices(d)->set_rank(d / per_rank);

  Tensor global(Shape{pieces * batch, cols}, DType::kF32);
  for (int64_t i = 0; i < global.numel(); ++i) global.SetDouble(i, static_cast<double>(i));
  int64_t next = 0;  // the first global row of the next rank
  for (int r = 0; r < ranks; ++r) {
    const FeedSpec spec = FeedSpecs(plan, r, FeedMode::kLocal).at(0);
    for (const Region& part : held[r]) RC_ASSERT(spec.rows.Contains(part));
    const Range rows = spec.rows.ranges[0];
    RC_ASSERT(rows.begin == next);
    next = rows.end;
    const Tensor local = LocalRows(global, spec);
    RC_ASSERT(local.shape() == (Shape{pieces * rows.size(), cols}));
    for (int64_t m = 0; m < pieces; ++m) {
      for (int64_t i = 0; i < rows.size() * cols; ++i) {
        RC_ASSERT(local.GetDouble(m * rows.size() * cols + i) ==
                  global.GetDouble((m * batch + rows.begin) * cols + i));
      }
    }
    const std::vector<FeedSpec> specs{spec};
    CheckFeeds(specs, {{"x", local}}, FeedMode::kLocal, r, "");
    if (rows.size() != batch) {
      RC_ASSERT_THROWS_AS(CheckFeeds(specs, {{"x", global}}, FeedMode::kLocal, r, ""), ShapeError);
    }
  }
  RC_ASSERT(next == batch);
}

}  // namespace
}  // namespace twinflow::runtime
