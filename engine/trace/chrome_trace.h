#pragma once
// Chrome trace event JSON (opens in Perfetto and chrome://tracing) of a TraceLayout: a process
// per device, a thread per track, a complete event per slice with its args, flow arrows, and
// counter events. Readable with any JSON parser, but large: a big run's trace is better
// written in Perfetto's protobuf format (perfetto_trace.h). Deterministic: the same layout
// gives the same bytes.
#include <string>

#include "engine/trace/trace_layout.h"

namespace twinflow::trace {

std::string ChromeTraceJson(const TraceLayout& layout);

}  // namespace twinflow::trace
