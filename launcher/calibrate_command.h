#pragma once
// `twinflow calibrate`: times the CPU kernels of a model's Plan on this host (by op, attributes
// and shapes) and measures memory bandwidth, then writes a cpu-local ClusterSpec with that
// kernel table, which `twinflow sim --cluster FILE` uses.
#include <ostream>
#include <string>
#include <vector>

namespace twinflow::launcher {

int RunCalibrateCommand(const std::vector<std::string>& args, std::ostream& out);

}  // namespace twinflow::launcher
