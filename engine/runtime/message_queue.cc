#include "engine/runtime/message_queue.h"

#include <utility>

namespace twinflow::runtime {

void MessageQueue::Push(WorkItem item, bool urgent) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    (urgent ? urgent_ : items_).push_back(std::move(item));
  }
  ready_.notify_one();
}

WorkItem MessageQueue::Take() {
  std::deque<WorkItem>& from = urgent_.empty() ? items_ : urgent_;
  WorkItem item = std::move(from.front());
  from.pop_front();
  return item;
}

bool MessageQueue::Pop(WorkItem& item, const std::atomic<bool>& stop) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait(lock, [&] { return !urgent_.empty() || !items_.empty() || stop.load(); });
  if (stop.load()) return false;
  item = Take();
  return true;
}

bool MessageQueue::PopFor(WorkItem& item, const std::atomic<bool>& stop,
                          std::chrono::microseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, wait,
                       [&] { return !urgent_.empty() || !items_.empty() || stop.load(); })) {
    return false;
  }
  if (stop.load()) return false;
  item = Take();
  return true;
}

void MessageQueue::Wake() {
  // Taking the lock orders the wake-up after a concurrent Pop's predicate check.
  { std::lock_guard<std::mutex> lock(mutex_); }
  ready_.notify_all();
}

}  // namespace twinflow::runtime
