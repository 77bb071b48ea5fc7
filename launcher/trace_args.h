#pragma once
// --trace FILE, --trace-devices and --trace-kinds for `sim` and `run`: checked before the run
// (a bad file name or filter fails at once, not after a long simulation), written after it.
#include <optional>
#include <string>

#include "engine/plan/plan.pb.h"
#include "engine/plan/trace_record.h"
#include "engine/trace/trace_writer.h"
#include "launcher/cli_args.h"

namespace twinflow::launcher {

struct TraceRequest {
  std::string path;
  trace::TraceFormat format = trace::TraceFormat::kChromeJson;
  trace::TraceOptions options;
};

void AddTraceFlags(ArgParser& parser);

// None without --trace. Processes are named by the Plan's device type until the caller sets
// options.device_prefix. InvalidArgumentError naming a bad file name or filter.
std::optional<TraceRequest> TraceRequestFromArgs(const ParsedArgs& parsed,
                                                 const std::string& title);

void WriteTrace(const TraceRequest& request, const plan::Plan& plan,
                const plan::TraceRecord& record);

}  // namespace twinflow::launcher
