// ThreadedExecutor on hand-built Plans: results equal direct kernel calls, variables loop
// across steps through ASSIGN, micro-batches repeat and accumulate, and devices meet in
// collectives and copy from each other, bit-identically from run to run.
#include "engine/runtime/threaded_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "tests/unit/hand_built_plan.h"

namespace twinflow::runtime {
namespace {

using namespace hand_plan;  // NOLINT: test helpers

TEST(TensorView, WritesThroughAndCopiesOwn) {
  std::vector<float> memory(6, 0.0f);
  Tensor view = Tensor::View(Shape{2, 3}, DType::kF32, reinterpret_cast<std::byte*>(memory.data()));
  EXPECT_TRUE(view.is_view());
  EXPECT_EQ(view.nbytes(), 24);
  view.Fill(2.0);
  EXPECT_EQ(memory[5], 2.0f);
  Tensor copy = view;  // an owning copy: writing it leaves the viewed memory alone
  EXPECT_FALSE(copy.is_view());
  copy.Fill(3.0);
  EXPECT_EQ(memory[0], 2.0f);
  Tensor moved = std::move(view);  // moving keeps the view
  moved.SetDouble(0, 5.0);
  EXPECT_EQ(memory[0], 5.0f);
  EXPECT_THROW(Tensor::View(Shape{1}, DType::kF32, nullptr), InvalidArgumentError);
}

// x -> matmul(x, w) -> relu -> y on one device over 3 steps.
TEST(ThreadedExecutor, ChainEqualsDirectKernelCalls) {
  const Shape xs{4, 3}, ws{3, 2}, ys{4, 2};
  PlanBuilder b(1);
  const int64_t src = b.Task(plan::SOURCE, 0, "x@0", "input");
  const int64_t var = b.Task(plan::VARIABLE, 0, "w@0", "variable");
  b.Attr(var, "init", std::string("normal"));
  b.Attr(var, "seed", int64_t{7});
  const int64_t mm = b.Task(plan::COMPUTE, 0, "matmul@0", "matmul");
  const int64_t relu = b.Task(plan::COMPUTE, 0, "relu@0", "relu");
  const int64_t sink = b.Task(plan::SINK, 0, "y@0");
  const int64_t x = b.Regst(src, {mm}, xs, 2);
  const int64_t w = b.Regst(var, {mm}, ws);
  b.Regst(mm, {relu}, ys, 2);
  const int64_t y = b.Regst(relu, {sink}, ys);
  PlanBuilder::Part(b.Feed("x", xs), x, Region::Full(xs));
  PlanBuilder::Part(b.Fetch("y", ys), y, Region::Full(ys));
  PlanBuilder::Part(b.Variable("w", ws), w, Region::Full(ws));
  const plan::Plan plan = b.Build();

  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(plan, registry);
  std::atomic<int> calls{0};
  const RunResult result = exec.Run(RandomFeed("x", xs, &calls), RunOptions{3, 10});
  EXPECT_EQ(calls.load(), 3);  // once per step
  ASSERT_EQ(result.fetches.size(), 3u);

  const Tensor weight =
      RunKernel("variable", {}, ws, Attrs{{"init", std::string("normal")}, {"seed", int64_t{7}}});
  EXPECT_TRUE(BitEqual(exec.Variable("w"), weight));
  for (int64_t step = 0; step < 3; ++step) {
    const Tensor input = RandomFeed("x", xs)(step).at("x");
    const Tensor product = RunKernel("matmul", {&input, &weight}, ys);
    const Tensor expected = RunKernel("relu", {&product}, ys);
    EXPECT_TRUE(BitEqual(result.fetches[step].at("y"), expected)) << "step " << step;
  }
  ASSERT_EQ(result.peak_arena_bytes.size(), 1u);
  EXPECT_GT(result.peak_arena_bytes[0], 0);
  EXPECT_LE(result.peak_arena_bytes[0], plan.memory(0).arena_bytes());
}

// v += x every step: add reads the variable, ASSIGN writes the sum back in place.
TEST(ThreadedExecutor, AssignCarriesVariablesAcrossSteps) {
  const Shape s{2, 2};
  PlanBuilder b(1);
  const int64_t src = b.Task(plan::SOURCE, 0, "x@0", "input");
  const int64_t var = b.Task(plan::VARIABLE, 0, "v@0", "variable");
  const int64_t add = b.Task(plan::COMPUTE, 0, "add@0", "add");
  const int64_t assign = b.Task(plan::ASSIGN, 0, "assign@0");
  const int64_t sink = b.Task(plan::SINK, 0, "sum@0");
  const int64_t v = b.Regst(var, {add, assign}, s);
  const int64_t x = b.Regst(src, {add}, s);
  const int64_t sum = b.Regst(add, {assign, sink}, s);
  PlanBuilder::Part(b.Feed("x", s), x, Region::Full(s));
  PlanBuilder::Part(b.Fetch("sum", s), sum, Region::Full(s));
  PlanBuilder::Part(b.Variable("v", s), v, Region::Full(s));
  const plan::Plan plan = b.Build();

  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(plan, registry);
  const FeedFn feed = RandomFeed("x", s);
  const RunResult first = exec.Run(feed, RunOptions{3, 10});
  Tensor expected(s, DType::kF32);
  for (int64_t step = 0; step < 3; ++step) {
    const Tensor in = feed(step).at("x");
    expected = RunKernel("add", {&expected, &in}, s);
    EXPECT_TRUE(BitEqual(first.fetches[step].at("sum"), expected)) << "step " << step;
  }
  EXPECT_TRUE(BitEqual(exec.Variable("v"), expected));

  // Variables keep their values across runs, and SetVariable replaces them.
  Tensor start(s, DType::kF32);
  start.Fill(10.0);
  exec.SetVariable("v", start);
  const RunResult second = exec.Run(feed, RunOptions{1, 10});
  const Tensor in0 = feed(0).at("x");
  EXPECT_TRUE(BitEqual(second.fetches[0].at("sum"), RunKernel("add", {&start, &in0}, s)));
  EXPECT_THROW(exec.SetVariable("v", Tensor(Shape{3}, DType::kF32)), ShapeError);
  EXPECT_THROW(exec.Variable("nope"), InvalidArgumentError);
}

// Two micro-batches per step: a variable is repeated per micro-batch, added to each, and the
// sums are accumulated over the step. Feeds and per-piece fetches stack micro-batches on axis 0.
TEST(ThreadedExecutor, MicroBatchesRepeatAndAccumulate) {
  const Shape piece{2, 2}, step{4, 2};
  PlanBuilder b(1, /*pieces_per_step=*/2);
  const int64_t src = b.Task(plan::SOURCE, 0, "x@0", "input");
  const int64_t var = b.Task(plan::VARIABLE, 0, "w@0", "variable");
  b.Attr(var, "init", std::string("ones"));
  const int64_t repeat = b.Task(plan::REPEAT, 0, "w_repeat@0");
  b.task(repeat).set_repeat_count(2);
  const int64_t add = b.Task(plan::COMPUTE, 0, "add@0", "add");
  const int64_t acc = b.Task(plan::ACC, 0, "acc@0");
  b.task(acc).set_acc_count(2);
  const int64_t y_sink = b.Task(plan::SINK, 0, "y@0");
  const int64_t g_sink = b.Task(plan::SINK, 0, "g@0");
  const int64_t x = b.Regst(src, {add}, piece, 2);
  const int64_t w = b.Regst(var, {repeat}, piece);
  b.Regst(repeat, {add}, piece);
  const int64_t y = b.Regst(add, {acc, y_sink}, piece, 2);
  const int64_t g = b.Regst(acc, {g_sink}, piece);
  PlanBuilder::Part(b.Feed("x", piece), x, Region::Full(piece));
  PlanBuilder::Part(b.Fetch("y", piece), y, Region::Full(piece));
  PlanBuilder::Part(b.Fetch("g", piece), g, Region::Full(piece));
  PlanBuilder::Part(b.Variable("w", piece), w, Region::Full(piece));
  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(b.Build(), registry);
  const FeedFn feed = RandomFeed("x", step);
  const RunResult result = exec.Run(feed, RunOptions{2, 10});
  for (int64_t s = 0; s < 2; ++s) {
    const Tensor in = feed(s).at("x");
    Tensor ones(step, DType::kF32);
    ones.Fill(1.0);
    EXPECT_TRUE(BitEqual(result.fetches[s].at("y"), RunKernel("add", {&in, &ones}, step)));
    const Tensor first = in.Slice(Rows(step, 0, 2)), second = in.Slice(Rows(step, 2, 4));
    const Tensor one = ones.Slice(Rows(step, 0, 2));
    const Tensor y0 = RunKernel("add", {&first, &one}, piece);
    const Tensor y1 = RunKernel("add", {&second, &one}, piece);
    EXPECT_TRUE(BitEqual(result.fetches[s].at("g"), RunKernel("add", {&y0, &y1}, piece)));
  }
  // A feed of one micro-batch's shape is refused, naming the feed.
  try {
    exec.Run(RandomFeed("x", piece), RunOptions{1, 10});
    FAIL() << "expected an error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(exec.Run(feed, RunOptions{0, 10}).fetches.empty());
}

TEST(ThreadedExecutor, CollectiveAndCopyAcrossDevices) {
  const plan::Plan plan = TwoDevicePlan();
  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(plan, registry);
  const Shape xs{4, 6}, ws{6, 2}, ys{4, 2};
  const FeedFn feed = RandomFeed("x", xs);
  std::atomic<int> calls{0};
  const RunResult result = exec.Run(RandomFeed("x", xs, &calls), RunOptions{2, 10});
  EXPECT_EQ(calls.load(), 2);  // both devices' sources share one call per step

  // Each device initialised its rows of the logical weight: together the whole-tensor value.
  const Tensor weight =
      RunKernel("variable", {}, ws, Attrs{{"init", std::string("normal")}, {"seed", int64_t{3}}});
  EXPECT_TRUE(BitEqual(exec.Variable("w"), weight));
  for (int64_t step = 0; step < 2; ++step) {
    const Tensor input = feed(step).at("x");
    const Tensor expected = RunKernel("matmul", {&input, &weight}, ys);
    EXPECT_LE(CloseRatio(result.fetches[step].at("z"), expected, 1e-5, 1e-6), 1.0);
    EXPECT_TRUE(BitEqual(result.fetches[step].at("z"), result.fetches[step].at("partial")));
  }
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_GT(result.peak_arena_bytes[d], 0);
    EXPECT_LE(result.peak_arena_bytes[d], plan.memory(static_cast<int>(d)).arena_bytes());
  }
  // Thread timing never changes a bit of the result.
  ThreadedExecutor again(plan, registry);
  const RunResult repeat = again.Run(feed, RunOptions{2, 10});
  for (int64_t step = 0; step < 2; ++step) {
    EXPECT_TRUE(BitEqual(repeat.fetches[step].at("z"), result.fetches[step].at("z")));
  }
}

}  // namespace
}  // namespace twinflow::runtime
