#pragma once
// `twinflow compile`: builds a model, runs the SBP search and lowering, and writes the Plan
// (protobuf) with a summary of its tasks, registers and per-device memory.
#include <ostream>
#include <string>
#include <vector>

namespace twinflow::launcher {

int RunCompileCommand(const std::vector<std::string>& args, std::ostream& out);

}  // namespace twinflow::launcher
