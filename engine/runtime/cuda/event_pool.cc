#include "engine/runtime/cuda/event_pool.h"

#include "kernels/cuda/cuda_check.h"

namespace twinflow::runtime::cuda {

EventPool::~EventPool() {
  for (cudaEvent_t event : free_) cudaEventDestroy(event);  // a destructor must not throw
}

std::shared_ptr<void> EventPool::Record(cudaStream_t stream) {
  cudaEvent_t event = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      event = free_.back();
      free_.pop_back();
    }
  }
  if (event == nullptr) TF_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  std::shared_ptr<void> fence(
      event, [pool = shared_from_this()](void* e) { pool->Return(static_cast<cudaEvent_t>(e)); });
  TF_CUDA_CHECK(cudaEventRecord(event, stream));
  return fence;
}

void EventPool::Return(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(event);
}

}  // namespace twinflow::runtime::cuda
