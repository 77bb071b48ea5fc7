#pragma once
// `twinflow sim`: compiles a model for a modelled cluster and runs its Plan in the simulator,
// printing step time, samples/s, MFU, and per device busy, exposed communication, bubble and
// planned memory against capacity; --trace writes a Chrome trace, --json a summary.
#include <ostream>
#include <string>
#include <vector>

namespace twinflow::launcher {

int RunSimCommand(const std::vector<std::string>& args, std::ostream& out);

}  // namespace twinflow::launcher
