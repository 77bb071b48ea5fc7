#include "engine/comm/nccl/nccl_bootstrap.h"

#include <mpi.h>

#include <algorithm>

#include "engine/comm/mpi_session.h"
#include "engine/comm/nccl/nccl_check.h"

namespace twinflow::comm {

ncclUniqueId BroadcastUniqueId(int rank) {
  ncclUniqueId id{};
  if (rank == 0) CheckNccl(ncclGetUniqueId(&id), "ncclGetUniqueId", rank);
  CheckMpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast (ncclUniqueId)");
  return id;
}

namespace {

ncclConfig_t BlockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  // Whatever NCCL_COMM_BLOCKING says: every call returns with its work on the stream.
  config.blocking = 1;
  return config;
}

}  // namespace

ncclComm_t InitWorld(const ncclUniqueId& id, int rank, int size) {
  ncclComm_t world = nullptr;
  ncclConfig_t config = BlockingConfig();
  CheckNccl(ncclCommInitRankConfig(&world, size, id, rank, &config), "ncclCommInitRankConfig",
            rank);
  return world;
}

std::vector<ncclComm_t> SplitChannels(ncclComm_t world, const ChannelPlan& channels, int rank) {
  std::vector<ncclComm_t> comms(channels.channels.size(), nullptr);
  for (int round = 0; round < channels.rounds; ++round) {
    // This rank's channel of the round (at most one: a round's channels are disjoint).
    int color = NCCL_SPLIT_NOCOLOR;
    int key = 0;
    size_t mine = comms.size();
    for (size_t c = 0; c < channels.channels.size(); ++c) {
      const Channel& channel = channels.channels[c];
      const auto at = std::find(channel.ranks.begin(), channel.ranks.end(), rank);
      if (channel.round != round || at == channel.ranks.end()) continue;
      color = static_cast<int>(c);
      key = static_cast<int>(at - channel.ranks.begin());
      mine = c;
    }
    ncclComm_t comm = nullptr;
    ncclConfig_t config = BlockingConfig();
    CheckNccl(ncclCommSplit(world, color, key, &comm, &config),
              "ncclCommSplit (round " + std::to_string(round) + ")", rank);
    if (mine < comms.size()) comms[mine] = comm;
  }
  return comms;
}

}  // namespace twinflow::comm
