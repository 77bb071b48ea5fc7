// Host staging across ranks (engine/runtime/host_staging.h), under mpirun -np 2: the same
// Plans run on 2 ranks of 2 devices each, on DeferredHostDevices (tests/support/
// deferred_device.h: asynchronous as a GPU is, so SEND, RECV and collectives spanning ranks go
// through host buffers over the MPI transport, as a GPU's do when NCCL cannot be used), and
// must give the losses of one process on HostDevices bit for bit. Covers an all-reduce across
// ranks (dp), collectives with two members per rank (tp=4) and SEND/RECV (pp across ranks).
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/comm/mpi_session.h"
#include "engine/comm/mpi_transport.h"
#include "engine/compiler/compile.h"
#include "engine/ops/builtin_ops.h"
#include "engine/runtime/threaded_executor.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "kernels/cpu/cpu_kernels.h"
#include "models/model.h"
#include "planner/lower_options.h"
#include "tests/mpi/mpi_test_session.h"
#include "tests/support/deferred_device.h"
#include "tests/support/step_losses.h"
#include "tests/support/tiny_gpt.h"

namespace twinflow {
namespace {

plan::Plan CompileFor(const models::BuiltModel& model, int64_t devices_per_rank) {
  static const graph::OpRegistry ops = ops::BuiltinOps();
  compiler::CompileOptions options;
  options.lower = planner::StrategyLowerOptions(model.strategy);
  options.lower.fetches = {model.loss};
  options.lower.devices_per_rank = devices_per_rank;
  return compiler::Compile(model.graph, ops, sbp::AlphaBetaCostModel(), options).plan;
}

std::vector<double> Losses(const models::BuiltModel& model, const plan::Plan& plan,
                           runtime::Transport* transport,
                           const runtime::DeviceFactory& make_device) {
  static const kernels::KernelRegistry kernels = kernels::CpuKernels();
  runtime::ThreadedExecutor executor(plan, kernels, transport, make_device);
  runtime::RunOptions run;
  run.steps = 3;
  run.watchdog_seconds = 60;
  run.feed = runtime::FeedMode::kGlobal;  // every rank is handed the whole batch
  const runtime::RunResult result =
      executor.Run([&](int64_t step) { return models::SyntheticBatch(model, step, 7); }, run);
  return testing::StepLosses(model, result);
}

// The arenas the test's devices allocated: memory the transport must never be handed, as a
// GPU's would not be readable by MPI.
struct DeviceMemory {
  std::mutex mutex;
  std::vector<std::pair<const std::byte*, const std::byte*>> ranges;
  bool Holds(const Tensor& t) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [begin, end] : ranges) {
      if (t.raw() >= begin && t.raw() < end) return true;
    }
    return false;
  }
};

class RecordedDevice : public testing::DeferredHostDevice {
 public:
  RecordedDevice(int64_t index, DeviceMemory& memory)
      : DeferredHostDevice(index), memory_(memory) {}
  std::byte* AllocateArena(int64_t bytes) override {
    std::byte* arena = DeferredHostDevice::AllocateArena(bytes);
    std::lock_guard<std::mutex> lock(memory_.mutex);
    memory_.ranges.emplace_back(arena, arena + bytes);
    return arena;
  }

 private:
  DeviceMemory& memory_;  // the test's; outlives the device
};

// The MPI transport, counting what it was handed in device memory (none when staged).
class CheckedTransport : public comm::MpiTransport {
 public:
  CheckedTransport(const plan::Plan& plan, DeviceMemory& memory)
      : MpiTransport(plan, testing::Session()), memory_(memory) {}
  void Recv(const plan::Task& recv, int64_t piece, Tensor slot, Done done) override {
    ++handed;
    if (memory_.Holds(slot)) ++in_device_memory;
    MpiTransport::Recv(recv, piece, std::move(slot), std::move(done));
  }
  void Collective(const plan::Task& task, int64_t piece,
                  std::vector<runtime::CollectiveMember> local, Done done) override {
    for (const runtime::CollectiveMember& m : local) {
      handed += 2;
      in_device_memory += memory_.Holds(m.one().input) + memory_.Holds(m.one().output);
    }
    MpiTransport::Collective(task, piece, std::move(local), std::move(done));
  }
  std::atomic<int64_t> handed{0};
  std::atomic<int64_t> in_device_memory{0};

 private:
  DeviceMemory& memory_;  // the test's; outlives the transport
};

class StagedRanks : public ::testing::TestWithParam<std::string> {};

TEST_P(StagedRanks, GiveOneProcesssLossesBitForBit) {
  static const graph::OpRegistry ops = ops::BuiltinOps();
  ASSERT_EQ(testing::Session().size(), 2) << "run under mpirun -np 2";
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy(GetParam());
  options.devices = 4;
  const models::BuiltModel model = models::BuildGpt(ops, testing::TinyGptConfig(), options);
  const std::vector<double> reference =
      Losses(model, CompileFor(model, 0), nullptr, runtime::MakeDevice);
  const plan::Plan plan = CompileFor(model, 2);
  DeviceMemory memory;
  CheckedTransport transport(plan, memory);
  // The devices live as long as the executor inside Losses; only their counts are read after.
  testing::PollTally polls;
  const std::vector<double> staged =
      Losses(model, plan, &transport, [&](const plan::Device& d, const runtime::DevicePlace&) {
        auto device = std::make_unique<RecordedDevice>(d.index(), memory);
        polls.Watch(*device);
        return device;
      });
  EXPECT_GT(polls.Total(), 0) << "no work was ever pending when polled: nothing was tested";
  EXPECT_GT(transport.handed.load(), 0) << "nothing crossed ranks: nothing was tested";
  EXPECT_EQ(transport.in_device_memory.load(), 0) << "the transport was handed device memory";
  ASSERT_EQ(reference.size(), 3u);
  EXPECT_EQ(staged, reference);
}

INSTANTIATE_TEST_SUITE_P(Strategies, StagedRanks,
                         ::testing::Values("dp=2,tp=2", "tp=4", "dp=2,pp=2,mb=4,schedule=1f1b"),
                         testing::StrategyTestName);

}  // namespace
}  // namespace twinflow
