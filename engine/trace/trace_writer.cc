#include "engine/trace/trace_writer.h"

#include "engine/core/error.h"
#include "engine/trace/chrome_trace.h"
#include "engine/trace/perfetto_trace.h"

namespace twinflow::trace {
namespace {

bool EndsWith(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

TraceFormat TraceFormatOf(const std::string& path) {
  if (EndsWith(path, ".json")) return TraceFormat::kChromeJson;
  if (EndsWith(path, ".pftrace") || EndsWith(path, ".perfetto-trace")) {
    return TraceFormat::kPerfetto;
  }
  throw InvalidArgumentError("--trace " + path +
                             ": name the file .json (Chrome JSON) or .pftrace (Perfetto protobuf)");
}

std::string EncodeTrace(const plan::Plan& plan, const plan::TraceRecord& record,
                        const TraceOptions& options, TraceFormat format) {
  const TraceLayout layout = LayOut(plan, record, options);
  return format == TraceFormat::kPerfetto ? PerfettoTrace(layout) : ChromeTraceJson(layout);
}

}  // namespace twinflow::trace
