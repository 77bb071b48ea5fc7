#pragma once
// The cluster flags `sim` and `tune` share: --cluster (a preset or a .pbtxt ClusterSpec) and
// --nodes.
#include "launcher/cli_args.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::launcher {

void AddClusterFlags(ArgParser& parser);
// InvalidArgumentError naming the preset, the file or the field at fault.
sim::ClusterSpec ClusterFromArgs(const ParsedArgs& args);

}  // namespace twinflow::launcher
