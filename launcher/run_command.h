#pragma once
// `twinflow run`: builds a model, compiles it to a Plan and trains it on CPU devices, in one
// process or across the ranks of mpirun, printing the loss of every step and the step time;
// with --check it also runs the single-device reference interpreter and prints the largest
// relative loss difference; --save and --load checkpoint.
#include <ostream>
#include <string>
#include <vector>

namespace twinflow::launcher {

int RunRunCommand(const std::vector<std::string>& args, std::ostream& out);

}  // namespace twinflow::launcher
