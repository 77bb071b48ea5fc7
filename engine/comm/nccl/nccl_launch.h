#pragma once
// The NCCL operations of one channel (nccl_channels.h), as work the NCCL transport's thread
// launches on the channel's stream once the sequencer says go. Collectives with one member per
// rank, comm rank = member index:
//   - all_reduce: ncclAllReduce; broadcast: ncclBroadcast from the root member;
//   - all_gather and reduce_scatter: ncclAllGather / ncclReduceScatter straight between the
//     slots where every member's chunk is as large and contiguous (cut along the outermost
//     axis that is not 1); otherwise the chunks are packed in device scratch by box copies and
//     moved by grouped ncclSend/ncclRecv (uneven all_gather) or ncclReduceScatter over the
//     packed input (even), or an all-reduce of it whose own chunk is kept (uneven);
//   - all_to_all: the input packed by destination, grouped ncclSend/ncclRecv, the received
//     chunks unpacked along the gather axis.
// SEND packs its box in scratch and ncclSends it; RECV ncclRecvs into its slot.
// Built with NCCL only; built, not verified on a GPU.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/core/reduce_op.h"
#include "engine/core/tensor.h"
#include "engine/plan/plan.pb.h"
#include "engine/runtime/transport.h"

namespace twinflow::comm {

// Device memory of one channel's operations: grow-only, used in stream order only by them.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  // At least `bytes`, in `stream`'s order (growing frees the old buffer after the operations
  // already on the stream, which may still use it).
  std::byte* Reserve(int64_t bytes, cudaStream_t stream);

 private:
  void* data_ = nullptr;
  int64_t bytes_ = 0;
};

// What an operation launches on: the channel's communicator and stream, this rank's place in
// it, and its scratch. Owned by the NCCL transport; used by its thread only.
struct ChannelStream {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int comm_rank = 0;
  int size = 0;
  int rank = 0;  // this process's rank, for errors
  DeviceScratch send;
  DeviceScratch recv;
};

using NcclWork = std::function<void(ChannelStream&)>;

// A collective member's work: `members` are the collective's tasks by member index (for the
// chunk extents), `tensors` views of this rank's member's slots in device memory (one pair, or
// a bucket's: its all-reduces go as one NCCL group).
NcclWork CollectiveWork(const plan::Plan& plan, const std::vector<const plan::Task*>& members,
                        const plan::Task& task, ReduceOp op,
                        std::vector<runtime::CollectiveTensors> tensors);
NcclWork SendWork(int peer, Tensor slot, const runtime::SendBox& box);
NcclWork RecvWork(int peer, Tensor slot);

}  // namespace twinflow::comm
