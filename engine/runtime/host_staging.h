#pragma once
// Host staging: how an asynchronous device (a GPU) talks to other ranks through a transport
// that reads and writes host memory only (MPI; Transport::reads_device_memory is false). A SEND
// downloads its slot and packs the box on the host; a RECV receives into a host buffer; a
// collective spanning ranks hands the transport host copies of its members' inputs and host
// outputs. What lands on the host comes back to the device's own thread as a StagedArrival
// (WorkItem::arrival), which uploads it into the slot; the act completes when that upload has
// run. This is the fallback where NCCL cannot be used (ranks sharing a GPU), and it costs a
// download (which waits for the device's earlier work) and an upload per message.
#include <vector>

#include "engine/core/tensor.h"

namespace twinflow::runtime {

struct StagedArrival {
  Tensor host;  // owning: the bytes received or computed on the host
  // Views of the act's output slots in device memory: one, or a bucket's, filled from
  // consecutive bytes of `host` in order.
  std::vector<Tensor> slots;
};

}  // namespace twinflow::runtime
