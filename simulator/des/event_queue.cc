#include "simulator/des/event_queue.h"

#include <algorithm>
#include <utility>

namespace twinflow::sim {

void EventQueue::Schedule(Nanos at, Action action) {
  events_.push(Event{std::max(at, now_), next_seq_++, std::move(action)});
}

bool EventQueue::RunNext() {
  if (events_.empty()) return false;
  Event event = events_.top();
  events_.pop();
  now_ = event.at;
  ++executed_;
  event.action();
  return true;
}

}  // namespace twinflow::sim
