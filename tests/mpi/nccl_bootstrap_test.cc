// NCCL's bootstrap over MPI (engine/comm/nccl/nccl_bootstrap.h), under mpirun -np 2: every rank
// gets rank 0's ncclUniqueId. ncclGetUniqueId needs no GPU, so this runs on every machine with
// NCCL; joining a communicator does need one, and without a GPU it must fail with an error that
// names NCCL and the rank (tests/gpu covers the GPU side).
#include "engine/comm/nccl/nccl_bootstrap.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cuda/cuda_env.h"
#include "tests/mpi/mpi_test_session.h"

namespace twinflow::comm {
namespace {

TEST(NcclBootstrap, EveryRankGetsRankZerosUniqueId) {
  const int rank = testing::Session().rank();
  const ncclUniqueId id = BroadcastUniqueId(rank);
  const std::string bytes(reinterpret_cast<const char*>(&id), sizeof(id));
  EXPECT_NE(bytes, std::string(sizeof(id), '\0')) << "rank 0 made no id";
  const std::vector<std::string> all = AllgatherText(bytes);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], all[1]);
  // A second bootstrap is a new id (a job's transports do not share communicators).
  const ncclUniqueId again = BroadcastUniqueId(rank);
  EXPECT_NE(std::memcmp(&id, &again, sizeof(id)), 0);
}

TEST(NcclBootstrap, WithoutAGpuJoiningFailsNamingNcclAndTheRank) {
  std::string reason;
  if (kernels::CudaDeviceCount(&reason) > 0) GTEST_SKIP() << "a GPU is present (tests/gpu)";
  const int rank = testing::Session().rank();
  const ncclUniqueId id = BroadcastUniqueId(rank);
  try {
    InitWorld(id, rank, testing::Session().size());
    FAIL() << "joined a communicator without a GPU";
  } catch (const CommError& e) {
    const std::string message = e.message();
    EXPECT_NE(message.find("NCCL: ncclCommInitRankConfig failed on rank " + std::to_string(rank)),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace twinflow::comm
