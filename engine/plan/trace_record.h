#pragma once
// What a run records for its trace: the span of every act, and (simulated runs) each device's
// live memory, its links' load over time, and the graph of the acts (Chakra export). Real runs
// (engine/runtime) and the simulator record the same kinds, so that engine/trace writes both alike.
// Plain data: TraceSpan is copied as bytes between ranks (launcher/run_command.cc).
#include <cstdint>
#include <vector>

namespace twinflow::plan {

struct TraceSpan {
  int64_t task = 0;
  int stream = 0;  // 0 compute, 1 communication
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// A device's live bytes from this time on (a memory counter track).
struct MemorySample {
  int device = 0;  // index into Plan.devices
  int64_t ns = 0;
  int64_t bytes = 0;
};

// A device link's load from this time on: the fraction of its bandwidth in use.
struct LinkSample {
  int device = 0;         // index into Plan.devices
  const char* link = "";  // a static name: "intra out", "nic in", ...
  int64_t ns = 0;
  double load = 0;
};

// One act of a task as a simulated run ordered it: the acts whose pieces it read, and the
// acts it had to follow besides (its task's previous act, and those an order register of the
// pipeline schedule made it wait for). Indices are into TraceRecord::acts, always earlier.
struct ActRecord {
  int64_t task = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::vector<int64_t> data_deps;
  std::vector<int64_t> ctrl_deps;
};

struct TraceRecord {
  std::vector<TraceSpan> spans;
  std::vector<MemorySample> memory;
  std::vector<LinkSample> links;
  std::vector<ActRecord> acts;  // the act graph (simulated runs with SimOptions::act_graph)
};

}  // namespace twinflow::plan
