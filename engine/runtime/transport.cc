#include "engine/runtime/transport.h"

#include "engine/core/error.h"

namespace twinflow::runtime {

void Transport::SendFromDevice(const plan::Task& send, int64_t piece, Tensor slot,
                               const SendBox& box, Done done) {
  (void)piece, (void)slot, (void)box, (void)done;
  throw PlanError("task '" + send.name() +
                  "': this transport sends from host memory only (the runtime stages the bytes)");
}

}  // namespace twinflow::runtime
