#include "launcher/cluster_args.h"

namespace twinflow::launcher {

void AddClusterFlags(ArgParser& parser) {
  parser
      .Optional("cluster", "NAME|FILE",
                "a preset (cpu-local, dgx-a100, dgx-h100, hgx-h200) "
                "or a ClusterSpec in protobuf text (.pbtxt)",
                "dgx-h100")
      .Optional("nodes", "N", "nodes of the cluster", "1");
}

sim::ClusterSpec ClusterFromArgs(const ParsedArgs& args) {
  std::optional<int> nodes;
  if (args.Given("nodes")) nodes = static_cast<int>(args.GetInt("nodes", 1, 1 << 20));
  return sim::LoadCluster(args.Get("cluster"), nodes);
}

int64_t SamplesPerStep(const models::BuiltModel& model) {
  if (model.feeds.empty()) return 1;
  const auto op = model.graph.FindOp(model.feeds.front());
  const Shape& shape = model.graph.tensor(model.graph.op(*op).outputs[0]).meta.shape;
  return (shape.rank() > 0 ? shape[0] : 1) * model.strategy.micro_batches;
}

}  // namespace twinflow::launcher
