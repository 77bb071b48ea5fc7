// ThreadedExecutor failures end the run with a clear error instead of a crash or a hang: a
// kernel error names the task, a Plan that does not fit this process is refused, and a
// deadlock is reported by the watchdog with the actors and registers they wait on.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "engine/core/error.h"
#include "engine/runtime/threaded_executor.h"
#include "kernels/builtin_kernels.h"
#include "tests/unit/hand_built_plan.h"

namespace twinflow::runtime {
namespace {

using namespace hand_plan;  // NOLINT: test helpers

TEST(ThreadedExecutor, KernelErrorNamesTheTask) {
  const Shape s{2, 2};
  PlanBuilder b(1);
  const int64_t src = b.Task(plan::SOURCE, 0, "x@0", "input");
  const int64_t bad = b.Task(plan::COMPUTE, 0, "layer/dropout@0", "dropout");  // no "rate"
  const int64_t sink = b.Task(plan::SINK, 0, "y@0");
  const int64_t x = b.Regst(src, {bad}, s);
  const int64_t y = b.Regst(bad, {sink}, s);
  PlanBuilder::Part(b.Feed("x", s), x, Region::Full(s));
  PlanBuilder::Part(b.Fetch("y", s), y, Region::Full(s));
  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(b.Build(), registry);
  try {
    exec.Run(RandomFeed("x", s), RunOptions{2, 10});
    FAIL() << "expected an error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("layer/dropout@0"), std::string::npos) << e.what();
  }
  // A missing feed is reported too, and the executor can run again afterwards.
  EXPECT_THROW(exec.Run([](int64_t) { return std::map<std::string, Tensor>{}; }, RunOptions{1, 10}),
               InvalidArgumentError);
}

TEST(ThreadedExecutor, PlansThatDoNotFitAreRejected) {
  const kernels::KernelRegistry registry = kernels::CpuKernels();
  // Devices of two types would need copies between them, which the runtime lacks.
  plan::Plan mixed = TwoDevicePlan();
  mixed.mutable_devices(1)->set_type(plan::DEVICE_CUDA);
  EXPECT_THROW(ThreadedExecutor(mixed, registry), PlanError);
  // A cuda device's tasks need cuda kernels: a CPU-only registry names the first it lacks.
  plan::Plan cuda = TwoDevicePlan();
  for (int d = 0; d < 2; ++d) cuda.mutable_devices(d)->set_type(plan::DEVICE_CUDA);
  try {
    ThreadedExecutor executor(cuda, registry);
    ADD_FAILURE() << "a cuda device ran with cpu kernels";
  } catch (const InvalidArgumentError& e) {
    // A build without CUDA says so first.
    const std::string expected = kernels::HaveCudaKernels() ? "no cuda f32 kernel for op"
                                                            : "this build of twinflow has no CUDA";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  plan::Plan small = TwoDevicePlan();
  small.mutable_memory(0)->set_arena_bytes(8);
  EXPECT_THROW(ThreadedExecutor(small, registry), PlanError);
  plan::Plan unknown = TwoDevicePlan();
  unknown.mutable_tasks(2)->mutable_op()->set_type("no_such_op");
  try {
    ThreadedExecutor exec(unknown, registry);
    FAIL() << "expected an error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_op"), std::string::npos) << e.what();
  }
}

// data feeds join directly and through a register with lag 1 and one slot: join keeps piece 0
// of the lagged register until its act 1, which needs data's piece 1, which needs that slot.
TEST(ThreadedExecutor, DeadlockFailsWithTimeoutNamingTheActors) {
  const Shape s{2};
  PlanBuilder b(1);
  const int64_t data = b.Task(plan::SOURCE, 0, "data@0", "input");
  const int64_t join = b.Task(plan::COMPUTE, 0, "join@0", "add");
  const int64_t sink = b.Task(plan::SINK, 0, "out@0");
  const int64_t direct = b.Regst(data, {join}, s);
  b.Regst(data, {join}, s, 1, 1);
  const int64_t out = b.Regst(join, {sink}, s);
  PlanBuilder::Part(b.Feed("x", s), direct, Region::Full(s));
  PlanBuilder::Part(b.Fetch("out", s), out, Region::Full(s));
  const kernels::KernelRegistry registry = kernels::CpuKernels();
  ThreadedExecutor exec(b.Build(), registry);
  const auto start = std::chrono::steady_clock::now();
  try {
    exec.Run(RandomFeed("x", s), RunOptions{3, 0.5});
    FAIL() << "expected a timeout";
  } catch (const TimeoutError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("data@0"), std::string::npos) << message;
    EXPECT_NE(message.find("join@0"), std::string::npos) << message;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The watchdog ends it (a 0.5 s timeout), not a hang: a generous bound, since a loaded
  // machine (CI, parallel builds) delays the threads' wake-ups by a second or more.
  EXPECT_LT(seconds, 10.0);
}

}  // namespace
}  // namespace twinflow::runtime
