#pragma once
// Writing a run's trace: the format follows the file's name, the content TraceLayout.
#include <string>

#include "engine/plan/plan.pb.h"
#include "engine/plan/trace_record.h"
#include "engine/trace/trace_layout.h"

namespace twinflow::trace {

enum class TraceFormat {
  kChromeJson,  // .json: Chrome trace event JSON
  kPerfetto,    // .pftrace or .perfetto-trace: Perfetto's protobuf trace, several times smaller
};

// InvalidArgumentError naming the path when its extension is none of the above.
TraceFormat TraceFormatOf(const std::string& path);

// The trace's bytes in `format`.
std::string EncodeTrace(const plan::Plan& plan, const plan::TraceRecord& record,
                        const TraceOptions& options, TraceFormat format);

}  // namespace twinflow::trace
