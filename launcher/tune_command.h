#pragma once
// `twinflow tune`: enumerates the strategies a cluster allows (dp x tp x pp = devices, tp within
// a node, micro-batches and schedules), compiles and simulates each, drops those that run out
// of memory or fail, and prints them ranked by simulated step time, with progress on stderr.
#include <ostream>
#include <string>
#include <vector>

namespace twinflow::launcher {

int RunTuneCommand(const std::vector<std::string>& args, std::ostream& out);

}  // namespace twinflow::launcher
