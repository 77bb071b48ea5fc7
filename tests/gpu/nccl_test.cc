// NCCL on one GPU (engine/comm/nccl): a one-rank world communicator, a channel split from it,
// and the transport's all-reduce and broadcast work on it, checked against the host's values.
// Every test skips (reported as skipped by ctest) when no CUDA device is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <vector>

#include "engine/comm/nccl/nccl_bootstrap.h"
#include "engine/comm/nccl/nccl_check.h"
#include "engine/comm/nccl/nccl_launch.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_env.h"

namespace twinflow::comm {
namespace {

#define REQUIRE_GPU()                                                                        \
  do {                                                                                       \
    std::string reason;                                                                      \
    if (kernels::CudaDeviceCount(&reason) == 0) GTEST_SKIP() << "no usable GPU: " << reason; \
  } while (0)

// A one-rank world, split into a one-rank channel, with a stream: what NcclTransport makes.
struct OneRank {
  ncclComm_t world = nullptr;
  ChannelStream channel;
  OneRank() {
    ncclUniqueId id{};
    CheckNccl(ncclGetUniqueId(&id), "ncclGetUniqueId", 0);
    TF_CUDA_CHECK(cudaSetDevice(0));
    world = InitWorld(id, 0, 1);
    ChannelPlan plan;
    plan.channels = {{{0}, 0}};
    plan.rounds = 1;
    channel.comm = SplitChannels(world, plan, 0).at(0);
    channel.size = 1;
    TF_CUDA_CHECK(cudaStreamCreateWithFlags(&channel.stream, cudaStreamNonBlocking));
  }
  ~OneRank() {
    cudaStreamSynchronize(channel.stream);
    ncclCommDestroy(channel.comm);
    ncclCommDestroy(world);
    cudaStreamDestroy(channel.stream);
  }
};

Tensor OnGpu(const std::vector<float>& values, void** memory) {
  const size_t bytes = values.size() * sizeof(float);
  TF_CUDA_CHECK(cudaMalloc(memory, bytes));
  TF_CUDA_CHECK(cudaMemcpy(*memory, values.data(), bytes, cudaMemcpyHostToDevice));
  return Tensor::View(Shape({static_cast<int64_t>(values.size())}), DType::kF32,
                      static_cast<std::byte*>(*memory));
}

std::vector<float> Back(const Tensor& t) {
  std::vector<float> values(static_cast<size_t>(t.numel()));
  TF_CUDA_CHECK(cudaMemcpy(values.data(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost));
  return values;
}

TEST(Nccl, OneRankCommunicatorRunsTheTransportsAllReduceAndBroadcast) {
  REQUIRE_GPU();
  OneRank one;
  int count = 0;
  CheckNccl(ncclCommCount(one.channel.comm, &count), "ncclCommCount", 0);
  EXPECT_EQ(count, 1);
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f};
  for (plan::CollectiveKind kind : {plan::ALL_REDUCE, plan::BROADCAST}) {
    void* in_memory = nullptr;
    void* out_memory = nullptr;
    const Tensor in = OnGpu(values, &in_memory);
    const Tensor out = OnGpu(std::vector<float>(values.size(), 0.0f), &out_memory);
    plan::Plan plan;
    plan::Task task;
    task.set_name("t");
    task.mutable_collective()->set_kind(kind);
    std::vector<runtime::CollectiveTensors> tensors;
    tensors.push_back({in.AsView(), out.AsView()});
    if (kind == plan::ALL_REDUCE) tensors.push_back({in.AsView(), in.AsView()});  // a bucket
    const NcclWork work = CollectiveWork(plan, {&task}, task, ReduceOp::kSum, std::move(tensors));
    work(one.channel);
    TF_CUDA_CHECK(cudaStreamSynchronize(one.channel.stream));
    EXPECT_EQ(Back(out), values) << plan::CollectiveKind_Name(kind);
    EXPECT_EQ(Back(in), values) << "in place, in a bucket";
    cudaFree(in_memory);
    cudaFree(out_memory);
  }
}

}  // namespace
}  // namespace twinflow::comm
