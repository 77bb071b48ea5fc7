#pragma once
// The discrete-event queue: events ordered by time (integer nanoseconds) and then by the order
// they were scheduled, so equal times never depend on anything but the program's own order. No
// wall clock, no randomness.
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace twinflow::sim {

using Nanos = int64_t;

class EventQueue {
 public:
  using Action = std::function<void()>;

  // Runs `action` at `at` (not before now: an earlier time is a logic error and is clamped).
  void Schedule(Nanos at, Action action);
  // Runs the next event; false when none is left.
  bool RunNext();
  Nanos now() const { return now_; }
  bool empty() const { return events_.empty(); }
  int64_t executed() const { return executed_; }

 private:
  struct Event {
    Nanos at = 0;
    int64_t seq = 0;
    Action action;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  Nanos now_ = 0;
  int64_t next_seq_ = 0;
  int64_t executed_ = 0;
};

}  // namespace twinflow::sim
