// The chunked chain all-reduce (engine/comm/chain_all_reduce.h) on 2 ranks, over a gradient
// bucket: tensors reduced where they lie, each cut into chunks on its own (sizes that are no
// whole number of chunks, an empty one), in place or into other outputs; every element must be
// the two ranks' sum, as the in-process reference adds them (x0 + x1), bit for bit.
#include "engine/comm/chain_all_reduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "engine/core/rng.h"
#include "engine/runtime/rendezvous.h"
#include "tests/mpi/mpi_test_session.h"

namespace twinflow {
namespace {

// Rank r's input k: the same on every rank that draws it, so each can compute the sum.
Tensor Input(int rank, int64_t k, int64_t elements) {
  Rng rng(static_cast<uint64_t>(100 * rank + k));
  return Tensor::Random(Shape{elements}, DType::kF32, rng);
}

TEST(ChainAllReduce, ABucketsTensorsAreEachTheSumOfTheRanks) {
  const int rank = testing::Session().rank();
  ASSERT_EQ(testing::Session().size(), 2);
  // 0.5 MiB, 1.6 MiB (a partial last chunk), empty, three elements.
  const std::vector<int64_t> sizes{131072, 419430, 0, 3};
  for (const bool in_place : {true, false}) {
    std::vector<Tensor> inputs, outputs;
    for (size_t k = 0; k < sizes.size(); ++k) {
      inputs.push_back(Input(rank, static_cast<int64_t>(k), sizes[k]));
      outputs.emplace_back(Shape{sizes[k]}, DType::kF32);
    }
    std::vector<runtime::CollectiveTensors> bucket;
    for (size_t k = 0; k < sizes.size(); ++k) {
      bucket.push_back({inputs[k].AsView(), (in_place ? inputs[k] : outputs[k]).AsView()});
    }
    std::vector<std::byte> scratch;
    comm::ChainAllReduce chain(bucket, ReduceOp::kSum, MPI_COMM_WORLD, scratch);
    chain.Start();
    while (!chain.Progress()) {
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (size_t k = 0; k < sizes.size(); ++k) {
      const Tensor x0 = Input(0, static_cast<int64_t>(k), sizes[k]);
      const Tensor x1 = Input(1, static_cast<int64_t>(k), sizes[k]);
      const Tensor& got = in_place ? inputs[k] : outputs[k];
      for (int64_t i = 0; i < sizes[k]; ++i) {
        const float want = x0.data<float>()[i] + x1.data<float>()[i];
        ASSERT_EQ(got.data<float>()[i], want)
            << "tensor " << k << " element " << i << (in_place ? " in place" : "");
      }
    }
  }
}

}  // namespace
}  // namespace twinflow
