#include "engine/trace/chrome_trace.h"

#include <cstdio>

namespace twinflow::trace {
namespace {

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

std::string Micros(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", static_cast<double>(ns) * 1e-3);
  return text;
}

std::string Metadata(const char* what, int pid, int tid, const std::string& name) {
  return ",\n{\"name\":\"" + std::string(what) + "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         (tid >= 0 ? ",\"tid\":" + std::to_string(tid) : "") + ",\"args\":{\"name\":\"" +
         Escape(name) + "\"}}";
}

std::string Args(const SliceArgs& args) {
  std::string text;
  const auto add = [&](const std::string& item) { text += (text.empty() ? "" : ",") + item; };
  if (args.bytes >= 0) add("\"bytes\":" + std::to_string(args.bytes));
  if (args.flops >= 0) {
    char flops[48];
    std::snprintf(flops, sizeof(flops), "\"flops\":%.17g", args.flops);
    add(flops);
  }
  if (!args.shapes.empty()) add("\"shapes\":\"" + Escape(args.shapes) + "\"");
  return text.empty() ? "" : ",\"args\":{" + text + "}";
}

std::string SliceEvent(const TraceLayout& layout, const TraceSlice& s) {
  const TraceTrack& track = layout.tracks[static_cast<size_t>(s.track)];
  const int pid = layout.processes[static_cast<size_t>(track.process)].pid;
  const bool act = s.task >= 0;
  const TaskLabel* label = act ? &layout.tasks[static_cast<size_t>(s.task)] : nullptr;
  return ",\n{\"name\":\"" + Escape(layout.SliceName(s)) + "\",\"cat\":\"" +
         (act ? label->category : std::string("link")) +
         "\",\"ph\":\"X\",\"ts\":" + Micros(s.start_ns) + ",\"dur\":" + Micros(s.dur_ns) +
         ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(track.tid) +
         (act ? Args(label->args) : "") + "}";
}

// A flow arrow, number `id`, from the middle of one slice to the middle of another.
std::string FlowEvents(const TraceLayout& layout, const TraceFlow& flow, size_t id) {
  std::string json;
  for (const size_t end : {flow.from, flow.to}) {
    const TraceSlice& s = layout.slices[end];
    const TraceTrack& track = layout.tracks[static_cast<size_t>(s.track)];
    json += ",\n{\"name\":\"data\",\"cat\":\"flow\",\"ph\":\"" +
            std::string(end == flow.from ? "s" : "f") + "\",\"id\":" + std::to_string(id) +
            ",\"ts\":" + Micros(s.start_ns + s.dur_ns / 2) +
            ",\"pid\":" + std::to_string(layout.processes[static_cast<size_t>(track.process)].pid) +
            ",\"tid\":" + std::to_string(track.tid) + (end == flow.from ? "" : ",\"bp\":\"e\"") +
            "}";
  }
  return json;
}

std::string CounterEvent(const TraceLayout& layout, const CounterPoint& p) {
  const CounterTrack& c = layout.counters[static_cast<size_t>(p.counter)];
  char value[48];
  if (c.bytes) {
    std::snprintf(value, sizeof(value), "{\"live bytes\":%.0f}", p.value);
  } else {
    std::snprintf(value, sizeof(value), "{\"load\":%.4f}", p.value);
  }
  return ",\n{\"name\":\"" + Escape(c.name) + "\",\"ph\":\"C\",\"ts\":" + Micros(p.ns) +
         ",\"pid\":" + std::to_string(layout.processes[static_cast<size_t>(c.process)].pid) +
         ",\"args\":" + value + "}";
}

}  // namespace

std::string ChromeTraceJson(const TraceLayout& layout) {
  std::string json = "{\"traceEvents\":[\n{\"name\":\"" + Escape(layout.title) +
                     "\",\"ph\":\"M\",\"pid\":0,\"tid\":0}";
  for (const TraceProcess& p : layout.processes)
    json += Metadata("process_name", p.pid, -1, p.name);
  for (const TraceTrack& t : layout.tracks) {
    json += Metadata("thread_name", layout.processes[static_cast<size_t>(t.process)].pid, t.tid,
                     t.name);
  }
  for (const TraceSlice& s : layout.slices) json += SliceEvent(layout, s);
  for (size_t i = 0; i < layout.flows.size(); ++i) json += FlowEvents(layout, layout.flows[i], i);
  for (const CounterPoint& p : layout.points) json += CounterEvent(layout, p);
  return json + "\n]}\n";
}

}  // namespace twinflow::trace
