#include "engine/plan/chrome_trace.h"

#include <algorithm>
#include <cstdio>

namespace twinflow::plan {
namespace {

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

}  // namespace

std::string ChromeTraceJson(const Plan& plan, const std::vector<TraceSpan>& spans,
                            const std::string& title) {
  int64_t origin = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    origin = i == 0 ? spans[i].start_ns : std::min(origin, spans[i].start_ns);
  }
  std::string json = "{\"traceEvents\":[\n{\"name\":\"" + Escape(title) +
                     "\",\"ph\":\"M\",\"pid\":0,\"tid\":0}";
  for (const Device& d : plan.devices()) {
    json += ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(d.id()) +
            ",\"args\":{\"name\":\"" + Escape(d.type()) + ":" + std::to_string(d.index()) + "\"}}";
  }
  for (const TraceSpan& s : spans) {
    if (s.task < 0 || s.task >= plan.tasks_size()) continue;
    const Task& t = plan.tasks(static_cast<int>(s.task));
    char times[128];
    std::snprintf(times, sizeof(times), "\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d",
                  static_cast<double>(s.start_ns - origin) * 1e-3,
                  static_cast<double>(s.end_ns - s.start_ns) * 1e-3, t.device(), s.stream);
    json += ",\n{\"name\":\"" + Escape(t.name()) + "\",\"cat\":\"" + TaskKind_Name(t.kind()) +
            "\",\"ph\":\"X\"," + times + "}";
  }
  return json + "\n]}\n";
}

}  // namespace twinflow::plan
