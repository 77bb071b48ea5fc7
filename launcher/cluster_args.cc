#include "launcher/cluster_args.h"

#include "engine/core/file_io.h"

namespace twinflow::launcher {

void AddClusterFlags(ArgParser& parser) {
  parser.Optional("cluster", "NAME|FILE", "a preset (cpu-local, dgx-a100, dgx-h100, hgx-h200) "
                  "or a ClusterSpec in protobuf text (.pbtxt)", "dgx-h100")
      .Optional("nodes", "N", "nodes of the cluster", "1");
}

sim::ClusterSpec ClusterFromArgs(const ParsedArgs& args) {
  const std::string cluster = args.Get("cluster");
  const int nodes = static_cast<int>(args.GetInt("nodes", 1, 1 << 20));
  if (cluster.size() > 6 && cluster.substr(cluster.size() - 6) == ".pbtxt") {
    sim::ClusterSpec spec = sim::ParseClusterSpec(ReadFile(cluster), cluster);
    if (args.Given("nodes")) spec.set_nodes(nodes);
    return spec;
  }
  return sim::Preset(cluster, nodes);
}

int64_t SamplesPerStep(const models::BuiltModel& model) {
  if (model.feeds.empty()) return 1;
  const auto op = model.graph.FindOp(model.feeds.front());
  const Shape& shape = model.graph.tensor(model.graph.op(*op).outputs[0]).meta.shape;
  return (shape.rank() > 0 ? shape[0] : 1) * model.strategy.micro_batches;
}


}  // namespace twinflow::launcher
