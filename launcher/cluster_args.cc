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

}  // namespace twinflow::launcher
