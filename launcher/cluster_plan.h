#pragma once
// The Plan `sim` simulates and `memory` reports, compiled once for both: without --devices,
// the product of the degrees, or the whole cluster when a degree is inferred; the search prices
// layouts with the cluster's own costs, and --ranks splits the devices over MPI ranks as `mpirun
// -np N twinflow run` would.
#include <string>
#include <vector>

#include "engine/compiler/compile.h"
#include "engine/graph/op_registry.h"
#include "engine/plan/plan.pb.h"
#include "launcher/cli_args.h"
#include "models/model.h"
#include "planner/compile_model.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::launcher {

struct ClusterPlan {
  ParsedArgs parsed;
  sim::Topology topology;
  models::BuiltModel model;  // its devices: --devices, else the degrees' or the cluster's
  compiler::Compiled compiled;
};

// Adds --ranks (the model and cluster flags are added by their own functions).
void AddRanksFlag(ArgParser& parser);
// Adds --no-fold and --replica (SimulatorFold).
void AddFoldFlag(ArgParser& parser);

// What `sim` and `memory` add when a folded Plan's copies are alike but for uneven splits
// (plan.proto PlanFold.uneven_shards).
inline constexpr const char* kUnevenShards =
    "  (a split over the copies is uneven: every copy is simulated with copy 0's shards, at "
    "most one element longer along the split than the last copy's)\n";

// The fold a simulated Plan of `strategy` on `spec` is lowered with (plan_fold.h): its
// data-parallel copies (planner::DataParallelFold; with --replica every replica,
// planner::ReplicaFold), unless --no-fold or --chakra is given or the cluster is a CPU host
// (whose cores the copies would share). InvalidArgumentError for --replica with either.
plan::DeviceFold SimulatorFold(const ParsedArgs& parsed, const parallel::Strategy& strategy,
                               const sim::ClusterSpec& spec);

// The lines `sim` and `memory` print of how the Plan was folded, or why not (empty: whole).
std::string FoldSummary(const ClusterPlan& cluster_plan);

// The fold mode the flags ask for (planner::SimulationFold): none with --no-fold, --chakra or
// --physical-devices, every replica with --replica. InvalidArgumentError for --replica with
// --no-fold or --chakra.
planner::FoldMode FoldModeFromArgs(const ParsedArgs& parsed);

// Parses `args` with `parser` (model, cluster, --ranks and --no-fold flags) and compiles the
// Plan, folded (SimulatorFold) on one rank; InvalidArgumentError names the flag at fault.
ClusterPlan CompileForCluster(const ArgParser& parser, const std::vector<std::string>& args,
                              const graph::OpRegistry& registry);

}  // namespace twinflow::launcher
