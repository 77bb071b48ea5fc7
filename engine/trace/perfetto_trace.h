#pragma once
// Perfetto's protobuf trace (perfetto_trace.proto) of a TraceLayout: a process track per device,
// a thread track per layout track, slices as begin/end events (zero-length ones as instants),
// counter tracks, flows, and the args of each act as debug annotations. Names, categories and
// annotation names are interned, so a large run's file is several times smaller than its
// Chrome JSON and loads without a JSON parser. Events are written in time order, ends before
// begins at one time, so each track's slices nest exactly as laid out. Deterministic.
#include <string>

#include "engine/trace/trace_layout.h"

namespace twinflow::trace {

std::string PerfettoTrace(const TraceLayout& layout);

}  // namespace twinflow::trace
