#pragma once
// The watchdog of a run: it wakes every 100 ms (or when a device thread finishes or fails) and
// decides how the run ends: every device done, a device failed, or no act completed for the
// configured time. It never waits for a device thread, so a stuck run cannot hang it.
#include <chrono>
#include <string>

#include "engine/runtime/run_context.h"

namespace twinflow::runtime {

enum class RunEnd { kDone, kFailed, kTimedOut };

RunEnd WatchRun(RunContext& ctx, double watchdog_seconds);

// After the device threads have stopped: what every unfinished actor waits for, and the
// collectives still missing members.
std::string DescribeStall(const RunContext& ctx);

}  // namespace twinflow::runtime
