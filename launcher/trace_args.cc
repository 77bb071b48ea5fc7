#include "launcher/trace_args.h"

#include "engine/core/file_io.h"

namespace twinflow::launcher {

void AddTraceFlags(ArgParser& parser) {
  parser
      .Optional("trace", "FILE",
                "write every act as a trace: FILE.json (Chrome JSON) or FILE.pftrace "
                "(Perfetto protobuf, several times smaller); both open in ui.perfetto.dev")
      .Optional("trace-devices", "LIST",
                "trace only these device indices, e.g. 0-7,16 (default: all)")
      .Optional("trace-kinds", "LIST",
                "trace only these task kinds, e.g. compute,collective (default: all, with "
                "memory and link counters)");
}

std::optional<TraceRequest> TraceRequestFromArgs(const ParsedArgs& parsed,
                                                 const std::string& title) {
  if (!parsed.Given("trace")) return std::nullopt;
  TraceRequest request;
  request.path = parsed.Get("trace");
  request.format = trace::TraceFormatOf(request.path);
  request.options.title = title;
  const auto given = [&](const char* flag) { return parsed.Given(flag) ? parsed.Get(flag) : ""; };
  request.options.filter = trace::ParseTraceFilter(given("trace-devices"), given("trace-kinds"));
  return request;
}

void WriteTrace(const TraceRequest& request, const plan::Plan& plan,
                const plan::TraceRecord& record) {
  WriteFileAtomically(request.path,
                      trace::EncodeTrace(plan, record, request.options, request.format));
}

}  // namespace twinflow::launcher
