#pragma once
// TraceLayout: what a trace of a run shows, before any file format. One process per device
// (named by the cluster's device kind, "gpu:3"), and in it tracks on which no two slices
// overlap at all: the compute stream's acts, the communication acts (concurrent collectives
// spread over "communication", "communication 2", ...), and each link's busy stretches; flow
// arrows for data crossing devices; counter tracks of live memory and link load. Both writers
// (chrome_trace.h, perfetto_trace.h) read this one layout, so the two formats show the same
// events. Deterministic: the same record gives the same layout.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/plan.pb.h"
#include "engine/plan/trace_record.h"
#include "engine/trace/trace_filter.h"

namespace twinflow::trace {

struct TraceOptions {
  std::string title;
  // Processes are named "<prefix>:<device index>"; empty: the Plan's device type ("cpu").
  std::string device_prefix;
  TraceFilter filter;
};

struct TraceProcess {
  int pid = 0;  // the device's index
  std::string name;
};

struct TraceTrack {
  int process = 0;  // index into TraceLayout::processes
  int tid = 0;      // unique within the process; 0 compute, 1 communication, then the rest
  std::string name;
};

// What a slice says besides its name: bytes a communication act moves, flops a kernel does,
// and the shapes of what the task writes ("bf16[8,1024]"). Absent values are -1 / empty.
struct SliceArgs {
  int64_t bytes = -1;
  double flops = -1;
  std::string shapes;
};

// An act of a task (task >= 0) or a stretch of constant link load (task -1, `load` of it).
struct TraceSlice {
  int track = 0;
  int64_t start_ns = 0;  // from the trace's origin
  int64_t dur_ns = 0;
  int64_t task = -1;
  double load = 0;
};

// Data crossing devices: from one slice to another (indices into TraceLayout::slices).
struct TraceFlow {
  size_t from = 0;
  size_t to = 0;
};

struct CounterTrack {
  int process = 0;
  std::string name;  // "memory" (bytes) or a link's name (load, 0 to 1)
  bool bytes = false;
};

struct CounterPoint {
  int counter = 0;  // index into TraceLayout::counters
  int64_t ns = 0;
  double value = 0;
};

// The names, categories and args of a Plan's tasks, by task id.
struct TaskLabel {
  std::string name;
  std::string category;  // the task kind, "COMPUTE"
  SliceArgs args;
};

struct TraceLayout {
  std::string title;
  std::vector<TraceProcess> processes;
  std::vector<TraceTrack> tracks;
  std::vector<TraceSlice> slices;  // per track in time order
  std::vector<TraceFlow> flows;
  std::vector<CounterTrack> counters;
  std::vector<CounterPoint> points;  // in time order per counter
  std::vector<TaskLabel> tasks;      // by task id

  // A slice's name: its task's, or the link's with its load ("nic out 40%").
  std::string SliceName(const TraceSlice& s) const;
};

TraceLayout LayOut(const plan::Plan& plan, const plan::TraceRecord& record,
                   const TraceOptions& options);

}  // namespace twinflow::trace
