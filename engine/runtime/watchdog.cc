#include "engine/runtime/watchdog.h"

#include <mutex>

namespace twinflow::runtime {

RunEnd WatchRun(RunContext& ctx, double watchdog_seconds) {
  using Clock = std::chrono::steady_clock;
  const auto limit = std::chrono::duration<double>(watchdog_seconds);
  int64_t seen = ctx.acts_done.load();
  auto last_progress = Clock::now();
  std::unique_lock<std::mutex> lock(ctx.state_mutex);
  while (true) {
    if (ctx.error) return RunEnd::kFailed;
    if (ctx.devices_running == 0) return RunEnd::kDone;
    ctx.state_changed.wait_for(lock, std::chrono::milliseconds(100));
    const int64_t acts = ctx.acts_done.load();
    const auto now = Clock::now();
    if (acts != seen) {
      seen = acts;
      last_progress = now;
    } else if (now - last_progress >= limit && !ctx.error && ctx.devices_running > 0) {
      return RunEnd::kTimedOut;
    }
  }
}

std::string DescribeStall(const RunContext& ctx) {
  constexpr int kMaxLines = 32;
  std::string out;
  int lines = 0, more = 0;
  auto add = [&](const std::string& line) {
    if (lines++ < kMaxLines) {
      out += "\n  " + line;
    } else {
      ++more;
    }
  };
  // Operations waiting on other ranks first: across ranks they say the most.
  if (ctx.transport) {
    for (const std::string& op : ctx.transport->Pending()) add(op);
  }
  for (size_t t = 0; t < ctx.actors.size(); ++t) {
    if (!ctx.actors[t]) continue;  // another rank's
    const Actor& actor = *ctx.actors[t];
    if (actor.finished()) continue;
    const std::string& name = ctx.plan.tasks(static_cast<int>(t)).name();
    const std::string waiting = actor.WaitingOn();
    add(waiting.find(name) == std::string::npos ? name + ": " + waiting : waiting);
  }
  for (const std::string& meeting : ctx.rendezvous.Pending()) add(meeting);
  if (more > 0) out += "\n  ... and " + std::to_string(more) + " more";
  return out;
}

}  // namespace twinflow::runtime
