#include "launcher/demo_command.h"

#include "launcher/boxing_command.h"
#include "launcher/cli_args.h"

namespace twinflow::launcher {
namespace {

struct DemoCase {
  const char* title;
  const char* why;  // what the plan shows
  const char* from;
  const char* to;
};

// Each case teaches one idea; together they cover collectives inside and across nodes,
// multi-step paths and moves between placements. The one-line notes describe the plans the
// planner picks under the default alpha-beta links; docs/boxing.md explains why.
constexpr DemoCase kCases[] = {
    {"Partial to broadcast inside a node",
     "One all_reduce per row of 4 devices; a row is one node, so only fast links are used.",
     "cpu:0-7 [2,4] (S(0),P)", "cpu:0-7 [2,4] (S(0),B)"},
    {"Partial on both mesh axes",
     "The hierarchical all-reduce: reduce-scatter in the node, all-reduce a quarter across "
     "nodes, all-gather in the node.",
     "cpu:0-7 [2,4] (P,P)", "cpu:0-7 [2,4] (B,B)"},
    {"Gather a 2-D sharded tensor",
     "The slow cross-node axis gathers first, while pieces are small; the node-local axis "
     "does the big gather.",
     "cpu:0-7 [2,4] (S(0),S(1))", "cpu:0-7 [2,4] (B,B)"},
    {"Change the split axis",
     "Only the cross-node axis changes its split, so only blocks cross nodes; the rest is "
     "gathered inside the node.",
     "cpu:0-7 [2,4] (S(0),B)", "cpu:0-7 [2,4] (S(1),B)"},
    {"Move to another placement",
     "8 devices to 4 others: re-split inside the node first, so that each destination needs "
     "exactly one copy.",
     "cpu:0-7 [2,4] (B,S(1))", "cpu:8-11 [4] S(0)"},
    {"Collect onto one device",
     "Reduce the partial values on the mesh (hierarchically), then copy the pieces to the "
     "single device cpu:0.",
     "cpu:0-7 [2,4] (P,P)", "cpu:0 B"},
};

}  // namespace

int RunDemoCommand(const std::vector<std::string>& args, std::ostream& out) {
  ArgParser parser("twinflow demo",
                   "Walks through instructive boxing plans for a 1024x1024 f32 tensor on the "
                   "2x4 mesh\ncpu:0-7 [2,4], with 4 devices per node so that mesh axis 0 "
                   "crosses nodes.");
  const ParsedArgs parsed = parser.Parse(args);
  if (parsed.help()) {
    out << parser.Usage();
    return 0;
  }
  out << "twinflow demo: boxing a 1024x1024 f32 tensor on the 2x4 mesh cpu:0-7 [2,4]\n"
      << "Alpha-beta cost model with 4 devices per node: mesh axis 1 (4 devices) lies inside a\n"
      << "node, mesh axis 0 (2 devices) crosses nodes. Each case prints the cheapest plan, as\n"
      << "`twinflow boxing --devices-per-node 4` would.\n";
  int index = 0;
  for (const DemoCase& demo : kCases) {
    BoxingQuery query;
    query.shape = Shape({1024, 1024});
    query.dtype = DType::kF32;
    query.from = ParseLayoutArg("from", demo.from);
    query.to = ParseLayoutArg("to", demo.to);
    query.devices_per_node = 4;
    out << "\n"
        << ++index << ". " << demo.title << ": " << demo.from << " -> " << demo.to << "\n   "
        << demo.why << "\n";
    PrintPlan(PlanQuery(query), out);
  }
  return 0;
}

}  // namespace twinflow::launcher
