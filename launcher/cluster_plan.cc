#include "launcher/cluster_plan.h"

#include "engine/core/error.h"
#include "launcher/cluster_args.h"
#include "launcher/model_args.h"
#include "simulator/hardware/search_cost.h"

namespace twinflow::launcher {

void AddRanksFlag(ArgParser& parser) {
  parser.Optional("ranks", "N",
                  "the Plan `mpirun -np N twinflow run` runs (devices split evenly over N "
                  "ranks, SEND/RECV between them)",
                  "1");
}

void AddFoldFlag(ArgParser& parser) {
  parser
      .Switch("no-fold",
              "lower every device, not one data-parallel copy of them standing in for the "
              "others (the same figures, slower)")
      .Switch("replica",
              "approximate, for any dp: one data-parallel replica stands in for every other, "
              "even where the replicas do not sit alike on the nodes (memory stays exact)");
}

planner::FoldMode FoldModeFromArgs(const ParsedArgs& parsed) {
  if (parsed.Given("replica") && (parsed.Given("no-fold") || parsed.Given("chakra"))) {
    throw InvalidArgumentError("--replica folds the Plan; --no-fold and --chakra need it whole");
  }
  // A Chakra export (sim --chakra) needs every device's acts; shared GPUs every device's work.
  if (parsed.Given("no-fold") || parsed.Given("chakra") || parsed.Given("physical-devices")) {
    return planner::FoldMode::kNone;
  }
  return parsed.Given("replica") ? planner::FoldMode::kReplica : planner::FoldMode::kDataParallel;
}

plan::DeviceFold SimulatorFold(const ParsedArgs& parsed, const parallel::Strategy& strategy,
                               const sim::ClusterSpec& spec) {
  return planner::SimulationFold(FoldModeFromArgs(parsed), strategy, spec);
}

std::string FoldSummary(const ClusterPlan& cluster_plan) {
  const plan::Plan& plan = cluster_plan.compiled.plan;
  const plan::DeviceFold fold = plan::DeviceFold::Of(plan);
  std::string text;
  if (fold.folded()) {
    text = "folded: " + std::to_string(plan.devices_size()) +
           " devices simulated, standing in for " + std::to_string(fold.copies) +
           " data-parallel copies" +
           (cluster_plan.parsed.Given("replica")
                ? " (--replica: approximate where the copies do not sit alike on the nodes)\n"
                : " alike (--no-fold lowers them all)\n");
    if (plan.fold().uneven_shards()) text += kUnevenShards;
  } else if (!cluster_plan.compiled.fold_refused.empty()) {
    text = "not folded, " + cluster_plan.compiled.fold_refused + "\n";
  }
  return text;
}

ClusterPlan CompileForCluster(const ArgParser& parser, const std::vector<std::string>& args,
                              const graph::OpRegistry& registry) {
  ParsedArgs parsed = parser.Parse(args);
  sim::Topology topology(ClusterFromArgs(parsed));
  // Without --devices: the product of the degrees, or the whole cluster when a degree is
  // inferred (tp=2 on an 8-GPU node runs dp=4, as Megatron would).
  models::BuiltModel model = BuildModelFromArgs(parsed, registry, false, topology.devices());
  const sbp::AlphaBetaConfig cost = sim::SearchCostConfig(topology.spec());
  const int64_t ranks = parsed.GetInt("ranks", 1, 1 << 20);
  const int64_t devices = model.devices;
  if (devices % ranks != 0) {
    throw InvalidArgumentError("--ranks: " + std::to_string(devices) +
                               " devices do not split over " + std::to_string(ranks) + " ranks");
  }
  const plan::DeviceFold fold =
      ranks > 1 ? plan::DeviceFold{} : SimulatorFold(parsed, model.strategy, topology.spec());
  compiler::Compiled compiled =
      CompileFromArgs(model, parsed, registry, ranks > 1 ? devices / ranks : 0, &cost, fold);
  return ClusterPlan{std::move(parsed), std::move(topology), std::move(model), std::move(compiled)};
}

}  // namespace twinflow::launcher
