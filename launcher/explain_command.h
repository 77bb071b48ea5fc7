#pragma once
// `twinflow explain`: builds a model under a strategy, runs the SBP search and prints each op's
// chosen signature, every boxing the layouts need (op, tensor, from, to, bytes, estimated time)
// and each device's parameter and activation bytes.
#include <ostream>
#include <string>
#include <vector>

namespace twinflow::launcher {

int RunExplainCommand(const std::vector<std::string>& args, std::ostream& out);

}  // namespace twinflow::launcher
