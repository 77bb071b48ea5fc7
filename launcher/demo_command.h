#pragma once
// `twinflow demo`: a short guided tour of boxing plans on a 2x4 mesh that spans two nodes.
#include <ostream>
#include <string>
#include <vector>

namespace twinflow::launcher {

// Runs `twinflow demo ARGS...`; returns the exit status. Throws twinflow::Error on bad input.
int RunDemoCommand(const std::vector<std::string>& args, std::ostream& out);

}  // namespace twinflow::launcher
