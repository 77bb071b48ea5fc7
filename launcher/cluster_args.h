#pragma once
// The cluster flags `sim` and `tune` share: --cluster (a preset or a .pbtxt ClusterSpec) and
// --nodes; and the samples one step of a model trains.
#include "launcher/cli_args.h"
#include "models/model.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::launcher {

void AddClusterFlags(ArgParser& parser);
// InvalidArgumentError naming the preset, the file or the field at fault.
sim::ClusterSpec ClusterFromArgs(const ParsedArgs& args);
// The first feed's leading extent times the micro-batches per step.
int64_t SamplesPerStep(const models::BuiltModel& model);

}  // namespace twinflow::launcher
