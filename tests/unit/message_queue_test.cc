// The device queue's two lanes (engine/runtime/message_queue.h): urgent items (returned slots,
// messages to communication acts) come out before the rest, and each lane keeps its order, so
// the messages of any one actor, which all travel in one lane, are never reordered.
#include "engine/runtime/message_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <vector>

namespace twinflow::runtime {
namespace {

std::vector<int64_t> DrainTasks(MessageQueue& queue) {
  const std::atomic<bool> stop{false};
  std::vector<int64_t> tasks;
  WorkItem item;
  while (queue.PopFor(item, stop, std::chrono::microseconds(0))) tasks.push_back(item.task);
  return tasks;
}

TEST(MessageQueue, UrgentItemsComeFirstAndEachLaneKeepsItsOrder) {
  MessageQueue queue;
  queue.Push(WorkItem{1, false, {}});
  queue.Push(WorkItem{2, false, {}});
  queue.Push(WorkItem{10, false, {}}, /*urgent=*/true);
  queue.Push(WorkItem{3, false, {}});
  queue.Push(WorkItem{11, false, {}}, /*urgent=*/true);
  EXPECT_EQ(DrainTasks(queue), (std::vector<int64_t>{10, 11, 1, 2, 3}));
}

TEST(MessageQueue, PopWaitsForEitherLaneAndStops) {
  MessageQueue queue;
  std::atomic<bool> stop{false};
  WorkItem item;
  EXPECT_FALSE(queue.PopFor(item, stop, std::chrono::microseconds(100)));
  queue.Push(WorkItem{7, true, {}}, /*urgent=*/true);
  ASSERT_TRUE(queue.Pop(item, stop));
  EXPECT_EQ(item.task, 7);
  EXPECT_TRUE(item.done);
  stop = true;
  queue.Push(WorkItem{8, false, {}});
  EXPECT_FALSE(queue.Pop(item, stop));
}

}  // namespace
}  // namespace twinflow::runtime
