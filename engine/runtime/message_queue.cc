#include "engine/runtime/message_queue.h"

#include <utility>

namespace twinflow::runtime {

void MessageQueue::Push(WorkItem item) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    items_.push_back(std::move(item));
  }
  ready_.notify_one();
}

bool MessageQueue::Pop(WorkItem& item, const std::atomic<bool>& stop) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait(lock, [&] { return !items_.empty() || stop.load(); });
  if (stop.load()) return false;
  item = std::move(items_.front());
  items_.pop_front();
  return true;
}

bool MessageQueue::PopFor(WorkItem& item, const std::atomic<bool>& stop,
                          std::chrono::microseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, wait, [&] { return !items_.empty() || stop.load(); })) return false;
  if (stop.load()) return false;
  item = std::move(items_.front());
  items_.pop_front();
  return true;
}

void MessageQueue::Wake() {
  // Taking the lock orders the wake-up after a concurrent Pop's predicate check.
  { std::lock_guard<std::mutex> lock(mutex_); }
  ready_.notify_all();
}

}  // namespace twinflow::runtime
