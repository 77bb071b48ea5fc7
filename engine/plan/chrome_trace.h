#pragma once
// Chrome trace event JSON (opens in Perfetto and chrome://tracing) for the acts of a Plan's
// tasks, written the same way for real runs (twinflow run --trace) and simulated ones
// (twinflow sim --trace), so the two can be laid side by side: one process per device, thread
// 0 its compute stream and thread 1 its communication, one complete event per act named by its
// task, and a flow arrow from each SEND act to its RECV act; optionally counters per device of
// its live memory and of its links' load (simulated runs). Deterministic: the same spans give
// the same bytes.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/plan.pb.h"

namespace twinflow::plan {

struct TraceSpan {
  int64_t task = 0;
  int stream = 0;  // 0 compute, 1 communication
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// A device's live bytes from this time on (a memory counter track).
struct MemorySample {
  int device = 0;
  int64_t ns = 0;
  int64_t bytes = 0;
};

// A device link's load from this time on: the fraction of its bandwidth in use.
struct LinkSample {
  int device = 0;
  const char* link = "";  // a static name: "intra out", "nic in", ...
  int64_t ns = 0;
  double load = 0;
};

// Spans in the order given; times relative to the earliest start.
std::string ChromeTraceJson(const Plan& plan, const std::vector<TraceSpan>& spans,
                            const std::string& title, const std::vector<MemorySample>& memory = {},
                            const std::vector<LinkSample>& links = {});

}  // namespace twinflow::plan
