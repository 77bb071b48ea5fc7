// What each rank feeds (engine/runtime/feed_spec.h): under feed=local the rows its devices hold,
// whole when the layout is broadcast across ranks, refused when the rows are not one block;
// every fed value checked with an error naming the feed, the shapes and the mode.
#include "engine/runtime/feed_spec.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/threaded_executor.h"
#include "tests/unit/hand_built_plan.h"

namespace twinflow::runtime {
namespace {

using namespace hand_plan;  // NOLINT: test helpers

// A feed `x` of `logical` with one part per device: parts[d] on device d, devices on `ranks`.
plan::Plan FeedPlan(const Shape& logical, const std::vector<int>& ranks,
                    const std::vector<Region>& parts, int64_t pieces = 1) {
  PlanBuilder b(static_cast<int>(ranks.size()), pieces);
  plan::Binding* feed = b.Feed("x", logical);
  feed->set_layout("test layout");
  for (size_t d = 0; d < ranks.size(); ++d) {
    const int64_t src =
        b.Task(plan::SOURCE, static_cast<int>(d), "x@" + std::to_string(d), "input");
    PlanBuilder::Part(feed, b.Regst(src, {}, parts[d].shape()), parts[d]);
  }
  plan::Plan plan = b.Build();
  for (size_t d = 0; d < ranks.size(); ++d)
    plan.mutable_devices(static_cast<int>(d))->set_rank(ranks[d]);
  return plan;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FeedSpec, DataParallelRanksFeedTheirRows) {
  const Shape x{8, 3};
  // dp=4 on 2 ranks of 2 devices: each rank holds two consecutive quarters.
  const plan::Plan plan =
      FeedPlan(x, {0, 0, 1, 1}, {Rows(x, 0, 2), Rows(x, 2, 4), Rows(x, 4, 6), Rows(x, 6, 8)});
  for (int rank = 0; rank < 2; ++rank) {
    const FeedSpec local = FeedSpecs(plan, rank, FeedMode::kLocal).at(0);
    EXPECT_EQ(local.shape, (Shape{4, 3}));
    EXPECT_EQ(local.rows, Rows(x, 4 * rank, 4 * rank + 4));
    EXPECT_TRUE(local.read);
    const FeedSpec global = FeedSpecs(plan, rank, FeedMode::kGlobal).at(0);
    EXPECT_EQ(global.shape, x);
    EXPECT_EQ(global.rows, Region::Full(x));
  }
}

TEST(FeedSpec, BroadcastAndReplicatedLayoutsFeedWholeOrOneBlock) {
  const Shape x{8, 3};
  // Broadcast across both ranks: each passes the whole tensor.
  const plan::Plan broadcast = FeedPlan(x, {0, 1}, {Region::Full(x), Region::Full(x)});
  EXPECT_EQ(FeedSpecs(broadcast, 1, FeedMode::kLocal).at(0).shape, x);
  // (S(0), B): ranks split the rows, a rank's two devices hold the same half.
  const plan::Plan replicated =
      FeedPlan(x, {0, 0, 1, 1}, {Rows(x, 0, 4), Rows(x, 0, 4), Rows(x, 4, 8), Rows(x, 4, 8)});
  EXPECT_EQ(FeedSpecs(replicated, 1, FeedMode::kLocal).at(0).rows, Rows(x, 4, 8));
  // (S(0), S(1)): a rank's devices split its rows by columns, which together are whole rows.
  const Shape x2{4, 6};
  Region a = Rows(x2, 2, 4), c = Rows(x2, 2, 4);
  a.ranges[1] = {0, 3};
  c.ranges[1] = {3, 6};
  Region a0 = a, c0 = c;
  a0.ranges[0] = c0.ranges[0] = {0, 2};
  const plan::Plan grid = FeedPlan(x2, {0, 0, 1, 1}, {a0, c0, a, c});
  EXPECT_EQ(FeedSpecs(grid, 1, FeedMode::kLocal).at(0).shape, (Shape{2, 6}));
}

TEST(FeedSpec, RowsThatAreNotOneBlockAreRefusedUnderLocalOnly) {
  const Shape x{8, 6};
  // Split by columns across ranks: no rank holds whole rows.
  const plan::Plan cols = FeedPlan(x, {0, 1}, {Cols(x, 0, 3), Cols(x, 3, 6)});
  const std::string message = ErrorOf([&] { FeedSpecs(cols, 1, FeedMode::kLocal); });
  EXPECT_NE(message.find("feed 'x'"), std::string::npos) << message;
  EXPECT_NE(message.find("test layout"), std::string::npos) << message;
  EXPECT_NE(message.find("feed=global"), std::string::npos) << message;
  EXPECT_THROW(FeedSpecs(cols, 1, FeedMode::kLocal), InvalidArgumentError);
  EXPECT_EQ(FeedSpecs(cols, 1, FeedMode::kGlobal).at(0).shape, x);
  // Rows 0:2 and 4:6 on rank 0: a gap.
  const plan::Plan gap =
      FeedPlan(x, {0, 1, 0, 1}, {Rows(x, 0, 2), Rows(x, 2, 4), Rows(x, 4, 6), Rows(x, 6, 8)});
  EXPECT_THROW(FeedSpecs(gap, 0, FeedMode::kLocal), InvalidArgumentError);
}

TEST(FeedSpec, ARankThatHoldsNoPartMayOmitTheFeed) {
  const Shape x{4, 2};
  const plan::Plan plan = FeedPlan(x, {0}, {Region::Full(x)});
  const std::vector<FeedSpec> specs = FeedSpecs(plan, 1, FeedMode::kLocal);
  EXPECT_FALSE(specs.at(0).read);
  EXPECT_NO_THROW(CheckFeeds(specs, {}, FeedMode::kLocal, 1, ""));
  EXPECT_NO_THROW(CheckFeeds(specs, {{"x", Tensor(x, DType::kF32)}}, FeedMode::kLocal, 1, ""));
  EXPECT_THROW(
      CheckFeeds(specs, {{"x", Tensor(Shape{2, 2}, DType::kF32)}}, FeedMode::kLocal, 1, ""),
      ShapeError);
  EXPECT_THROW(CheckFeeds(FeedSpecs(plan, 0, FeedMode::kLocal), {}, FeedMode::kLocal, 0, ""),
               InvalidArgumentError);
}

TEST(FeedSpec, AWrongShapeOrDtypeIsRefusedNamingFeedShapesAndMode) {
  const Shape x{8, 3};
  const plan::Plan plan = FeedPlan(x, {0, 1}, {Rows(x, 0, 4), Rows(x, 4, 8)});
  const std::vector<FeedSpec> specs = FeedSpecs(plan, 1, FeedMode::kLocal);
  // The whole batch where the rank's shard is expected: the DistributedSampler mistake.
  const std::string message = ErrorOf([&] {
    CheckFeeds(specs, {{"x", Tensor(x, DType::kF32)}}, FeedMode::kLocal, 1, "");
  });
  EXPECT_EQ(message,
            "Shape error: feed 'x' is f32[8,3], feed=local expects f32[4,3] on rank 1 (rows 4:8 "
            "of the batch of 8)");
  EXPECT_THROW(
      CheckFeeds(specs, {{"x", Tensor(Shape{4, 3}, DType::kI32)}}, FeedMode::kLocal, 1, ""),
      ShapeError);
  EXPECT_NO_THROW(
      CheckFeeds(specs, {{"x", Tensor(Shape{4, 3}, DType::kF32)}}, FeedMode::kLocal, 1, ""));
}

TEST(FeedSpec, LocalRowsTakeEachMicroBatchsRows) {
  const Shape x{4, 2};  // one micro-batch; a step holds 2
  const plan::Plan plan = FeedPlan(x, {0, 1}, {Rows(x, 0, 2), Rows(x, 2, 4)}, /*pieces=*/2);
  const FeedSpec spec = FeedSpecs(plan, 1, FeedMode::kLocal).at(0);
  EXPECT_EQ(spec.shape, (Shape{4, 2}));
  Tensor global(Shape{8, 2}, DType::kF32);
  for (int64_t i = 0; i < global.numel(); ++i) global.SetDouble(i, static_cast<double>(i));
  const Tensor local = LocalRows(global, spec);
  // Rows 2:4 of micro-batch 0 (global rows 2, 3), then of micro-batch 1 (global rows 6, 7).
  const std::vector<double> expected = {4, 5, 6, 7, 12, 13, 14, 15};
  for (int64_t i = 0; i < local.numel(); ++i) EXPECT_EQ(local.GetDouble(i), expected[i]) << i;
  EXPECT_THROW(LocalRows(Tensor(x, DType::kF32), spec), ShapeError);
}

TEST(FeedSpec, ModesParseByName) {
  EXPECT_EQ(ParseFeedMode("local", "--feed"), FeedMode::kLocal);
  EXPECT_EQ(ParseFeedMode("global", "--feed"), FeedMode::kGlobal);
  EXPECT_EQ(std::string(FeedModeName(FeedMode::kGlobal)), "global");
  const std::string message = ErrorOf([] { ParseFeedMode("shard", "--feed"); });
  EXPECT_NE(message.find("--feed"), std::string::npos) << message;
}

// In one process every device is this rank's: feed=local is the whole batch, and the executor
// reports it and refuses anything else before reading a row.
TEST(FeedSpec, OneRankExecutorExpectsTheWholeBatch) {
  const plan::Plan plan = TwoDevicePlan();
  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(plan, registry);
  EXPECT_EQ(exec.FeedSpecs(FeedMode::kLocal).at(0).shape, (Shape{4, 6}));
  RunOptions options{1, 10};
  const RunResult local = exec.Run(RandomFeed("x", Shape{4, 6}), options);
  options.feed = FeedMode::kGlobal;
  const RunResult global = exec.Run(RandomFeed("x", Shape{4, 6}), options);
  EXPECT_TRUE(BitEqual(local.fetches[0].at("z"), global.fetches[0].at("z")));
  const std::string message = ErrorOf([&] {
    exec.Run(RandomFeed("x", Shape{2, 6}), RunOptions{1, 10});
  });
  EXPECT_NE(message.find("feed 'x' is f32[2,6], feed=local expects f32[4,6]"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace twinflow::runtime
