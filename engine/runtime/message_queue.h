#pragma once
// MessageQueue: the inbox of one device thread. Other threads post actor messages and
// completions; the owner pops them in arrival order and sleeps while the queue is empty.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>

#include "engine/runtime/actor.h"

namespace twinflow::runtime {

struct WorkItem {
  int64_t task = 0;
  bool done = false;     // a completion (Done) rather than a message
  ActorMessage message;  // when !done
  // When done, in traced runs: when the communication completed, which can be long before the
  // device's thread, busy with a kernel, gets to this item.
  int64_t finished_ns = 0;
};

class MessageQueue {
 public:
  void Push(WorkItem item);
  // Waits for an item; false (and no item) once `stop` is set.
  bool Pop(WorkItem& item, const std::atomic<bool>& stop);
  // As Pop, waiting at most `wait`: false also when none came (a device thread with GPU work in
  // flight returns to poll its fences).
  bool PopFor(WorkItem& item, const std::atomic<bool>& stop, std::chrono::microseconds wait);
  // Wakes a waiting Pop so that it sees `stop`.
  void Wake();

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<WorkItem> items_;
};

}  // namespace twinflow::runtime
