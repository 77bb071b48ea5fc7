#include "launcher/replica_args.h"

#include "engine/core/error.h"
#include "launcher/cluster_args.h"
#include "launcher/model_args.h"
#include "models/strategy.h"

namespace twinflow::launcher {
namespace {

// `args` without the given flags (as "--flag value" or "--flag=value") and switches ("--switch",
// no value).
std::vector<std::string> WithoutFlags(const std::vector<std::string>& args,
                                      const std::vector<std::string>& flags,
                                      const std::vector<std::string>& switches = {}) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    bool drop = false;
    for (const std::string& s : switches) drop |= args[i] == "--" + s;
    for (const std::string& f : flags) {
      if (args[i] == "--" + f) {
        drop = true;
        ++i;  // and its value
      } else if (args[i].rfind("--" + f + "=", 0) == 0) {
        drop = true;
      }
    }
    if (!drop) kept.push_back(args[i]);
  }
  return kept;
}

}  // namespace

std::pair<std::vector<std::string>, int64_t> ReplicaArgs(const ArgParser& parser,
                                                         const std::vector<std::string>& args,
                                                         const sim::Topology& topology,
                                                         const graph::OpRegistry& registry) {
  const ParsedArgs parsed = parser.Parse(args);
  if (models::ParseStrategy(parsed.Get("strategy")).automatic) {
    throw InvalidArgumentError("--replica needs dp=,tp=,pp= degrees");
  }
  const models::BuiltModel whole = BuildModelFromArgs(parsed, registry, false, topology.devices());
  models::Strategy strategy = whole.strategy;  // resolved, micro-batches counted
  const int64_t dp = strategy.dp;
  const int64_t samples = SamplesPerStep(whole);
  const int nodes = topology.spec().nodes();
  if (samples % dp != 0 || nodes % dp != 0) {
    throw InvalidArgumentError("--replica: dp=" + std::to_string(dp) + " must divide the batch (" +
                               std::to_string(samples) + ") and the nodes (" +
                               std::to_string(nodes) + ")");
  }
  strategy.dp = 1;
  std::vector<std::string> replica = WithoutFlags(
      args, {"strategy", "batch", "global-batch-size", "micro-batch-size", "devices", "nodes"},
      {"replica"});
  for (const std::string& s :
       {std::string("--strategy"), strategy.ToString(), std::string("--batch"),
        std::to_string(samples / dp), std::string("--devices"), std::to_string(strategy.devices()),
        std::string("--nodes"), std::to_string(nodes / dp)}) {
    replica.push_back(s);
  }
  return {replica, dp};
}

}  // namespace twinflow::launcher
