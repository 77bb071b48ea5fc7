#pragma once
// Bringing NCCL up over MPI: rank 0's ncclUniqueId goes to every rank by MPI_Bcast, every rank
// joins the world communicator on its GPU, and the channels (nccl_channels.h) are split from
// it, one ncclCommSplit per round. Collective over MPI_COMM_WORLD: every rank calls these in
// the same order. Built with NCCL only; the id broadcast is tested under mpirun on machines
// without a GPU, the communicators only on a GPU.
#include <nccl.h>

#include <vector>

#include "engine/comm/nccl_channels.h"

namespace twinflow::comm {

// Rank 0's new ncclUniqueId, on every rank (CommError naming NCCL or MPI on failure).
ncclUniqueId BroadcastUniqueId(int rank);

// The world communicator of `size` ranks on the calling thread's current GPU.
ncclComm_t InitWorld(const ncclUniqueId& id, int rank, int size);

// This rank's communicator of every channel (null for the channels it is not in), in channel
// order, comm rank = position in the channel's ranks.
std::vector<ncclComm_t> SplitChannels(ncclComm_t world, const ChannelPlan& channels, int rank);

}  // namespace twinflow::comm
