#pragma once
// --replica for `sim` and `tune`: one data-parallel replica of a job stands for all of them
// (each optimizer update first all-reduces its gradient over the replicas; SimOptions).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/graph/op_registry.h"
#include "launcher/cli_args.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::launcher {

// The flags of one data-parallel replica of the job `args` describe on `topology` (dp=1, the
// batch, devices and nodes divided by dp), and dp. InvalidArgumentError when the strategy is
// automatic or dp does not divide the batch and the nodes.
std::pair<std::vector<std::string>, int64_t> ReplicaArgs(const ArgParser& parser,
                                                         const std::vector<std::string>& args,
                                                         const sim::Topology& topology,
                                                         const graph::OpRegistry& registry);

}  // namespace twinflow::launcher
