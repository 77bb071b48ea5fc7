#pragma once
// `twinflow memory`: compiles a model as `sim` does and prints the per-device memory of its
// Plan per pipeline stage: the arena the runtime allocates (the figure `sim` reports) and the
// planned peak split into weights, gradients, optimizer state, activations and communication
// buffers; --json writes every device.
#include <ostream>
#include <string>
#include <vector>

namespace twinflow::launcher {

int RunMemoryCommand(const std::vector<std::string>& args, std::ostream& out);

}  // namespace twinflow::launcher
