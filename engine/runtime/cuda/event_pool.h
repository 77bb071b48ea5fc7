#pragma once
// EventPool: the CUDA events a device's fences use, made once and reused. A device marks a
// fence after every act, thousands a step; creating and destroying an event each time costs
// host time the device thread needs for launching. A fence's event returns to the pool when
// the last copy of the fence is dropped (after it passed, or abandoned after a failure:
// recording it again starts it afresh).
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <vector>

namespace twinflow::runtime::cuda {

class EventPool : public std::enable_shared_from_this<EventPool> {
 public:
  // Held by shared_ptr: every fence keeps its pool alive, so the pool outlives the device
  // when a fence does.
  static std::shared_ptr<EventPool> Make() { return std::shared_ptr<EventPool>(new EventPool); }
  ~EventPool();  // destroys the pooled events (none is in use: their fences hold the pool)

  // An event recorded on `stream` now, as a fence: a shared pointer whose deleter returns the
  // event to the pool. The caller has the stream's GPU current. DeviceError naming the call.
  std::shared_ptr<void> Record(cudaStream_t stream);

 private:
  EventPool() = default;
  void Return(cudaEvent_t event);

  std::mutex mutex_;  // fences may be dropped on any thread
  std::vector<cudaEvent_t> free_;
};

}  // namespace twinflow::runtime::cuda
