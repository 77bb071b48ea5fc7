#pragma once
// MessageQueue: the inbox of one device thread. Other threads post actor messages and
// completions; the owner pops them in arrival order and sleeps while the queue is empty.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "engine/runtime/actor.h"
#include "engine/runtime/host_staging.h"

namespace twinflow::runtime {

struct WorkItem {
  int64_t task = 0;
  bool done = false;     // a completion (Done) rather than a message
  ActorMessage message;  // when !done
  // When done, in traced runs: when the communication completed, which can be long before the
  // device's thread, busy with a kernel, gets to this item.
  int64_t finished_ns = 0;
  // When done, for an act staged through host memory (host_staging.h): the bytes that came to
  // the host, which the device's thread uploads into the act's slot before it completes.
  std::shared_ptr<const StagedArrival> arrival;
};

// FIFO, but for `urgent` items (returned slots, messages to communication acts), which go
// before the rest, in their own FIFO: a collective that became ready with a kernel is handed to
// its peers before that kernel runs, not after it, so that it overlaps the kernel instead of
// waiting for it (RunContext::Post decides).
class MessageQueue {
 public:
  void Push(WorkItem item, bool urgent = false);
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
  std::deque<WorkItem> urgent_;
  std::deque<WorkItem> items_;
  // The next item, urgent first; the caller holds the lock and knows there is one.
  WorkItem Take();
};

}  // namespace twinflow::runtime
