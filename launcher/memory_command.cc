#include "launcher/memory_command.h"

#include <sstream>

#include "engine/core/file_io.h"
#include "engine/core/text_format.h"
#include "engine/ops/builtin_ops.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_fold.h"
#include "launcher/cluster_args.h"
#include "launcher/cluster_plan.h"
#include "launcher/model_args.h"
#include "planner/memory_report.h"

namespace twinflow::launcher {
namespace {

// A Plan device by the cluster's kind and its index there ("gpu:3"), as `sim` names it.
std::string DeviceName(const plan::Plan& plan, const sim::ClusterSpec& spec, int32_t device) {
  return sim::DeviceName(spec, plan.devices(device).index());
}

std::string Json(const plan::Plan& plan, const sim::ClusterSpec& spec,
                 const std::vector<planner::DeviceMemory>& devices) {
  std::ostringstream out;
  out << "{\"devices\": [";
  for (size_t i = 0; i < devices.size(); ++i) {
    const planner::DeviceMemory& d = devices[i];
    out << (i ? "," : "") << "\n  {\"device\": \"" << DeviceName(plan, spec, d.device)
        << "\", \"stage\": " << d.stage << ", \"arena_bytes\": " << d.arena_bytes
        << ", \"peak_bytes\": " << d.peak_bytes;
    for (compiler::MemoryCategory c : compiler::kAllMemoryCategories) {
      std::string key = compiler::MemoryCategoryName(c);
      for (char& ch : key) ch = ch == ' ' ? '_' : ch;
      out << ", \"" << key << "_bytes\": " << d.bytes[static_cast<int>(c)];
    }
    out << "}";
  }
  out << "\n]}\n";
  return out.str();
}

// The largest registers of each stage's fullest device (--top N).
void PrintLargest(const plan::Plan& plan, const sim::ClusterSpec& spec,
                  const std::vector<planner::StageMemory>& stages, int64_t n, std::ostream& out) {
  for (const planner::StageMemory& s : stages) {
    out << "stage " << s.stage << ", " << DeviceName(plan, spec, s.fullest.device) << ": the " << n
        << " largest registers\n";
    TextTable table({"register", "producer", "holds", "bytes", "slots", "memory"});
    for (const planner::RegisterMemory& r : planner::LargestRegisters(plan, s.fullest.device, n)) {
      table.Add({std::to_string(r.regst), r.producer, compiler::MemoryCategoryName(r.category),
                 FormatBytes(r.bytes_per_slot), std::to_string(r.slots),
                 r.shared ? "shared in a chain" : "own"});
    }
    table.Print(out);
  }
}

int Report(const ArgParser& parser, const std::vector<std::string>& args, std::ostream& out) {
  const graph::OpRegistry registry = ops::BuiltinOps();
  const ClusterPlan compiled = CompileForCluster(parser, args, registry);
  const plan::Plan& plan = compiled.compiled.plan;
  const sim::ClusterSpec& spec = compiled.topology.spec();
  const std::vector<planner::DeviceMemory> devices = planner::DeviceMemories(plan);
  const int copies = plan::DeviceFold::Of(plan).copies;  // the other copies' devices alike
  out << "memory of " << compiled.parsed.Get("model") << ", strategy "
      << compiled.model.strategy.ToString() << ", optimizer "
      << models::OptimizerLabel(compiled.model) << ", on " << spec.name() << " x " << spec.nodes()
      << " nodes (" << plan.devices_size() * copies << " devices)\n";
  out << FoldSummary(compiled);
  std::vector<std::string> header = {"stage", "devices",     "fullest",
                                     "arena", "of capacity", "planned peak"};
  for (compiler::MemoryCategory c : compiler::kAllMemoryCategories)
    header.push_back(compiler::MemoryCategoryName(c));
  TextTable table(header);
  for (const planner::StageMemory& s : planner::StageMemories(devices)) {
    const planner::DeviceMemory& f = s.fullest;
    std::vector<std::string> row = {
        std::to_string(s.stage),
        std::to_string(s.devices.size() * copies),
        DeviceName(plan, spec, f.device),
        FormatBytes(f.arena_bytes),
        FormatFixed(100.0 * static_cast<double>(f.arena_bytes) /
                        static_cast<double>(sim::UsableMemoryBytes(spec)),
                    1) +
            "%",
        FormatBytes(f.peak_bytes)};
    for (compiler::MemoryCategory c : compiler::kAllMemoryCategories)
      row.push_back(FormatBytes(f.bytes[static_cast<int>(c)]));
    table.Add(row);
  }
  table.Print(out);
  out << "arena: what the runtime allocates per device and `sim` reports; the categories split "
         "the planned peak (the most bytes live at once), the arena adds the layout's slack\n";
  if (compiled.parsed.Given("top")) {
    PrintLargest(plan, spec, planner::StageMemories(devices),
                 compiled.parsed.GetInt("top", 1, 1 << 20), out);
  }
  if (compiled.parsed.Given("json"))
    WriteFileAtomically(compiled.parsed.Get("json"), Json(plan, spec, devices));
  return 0;
}

}  // namespace

int RunMemoryCommand(const std::vector<std::string>& args, std::ostream& out) {
  ArgParser parser("twinflow memory",
                   "Compile a model as `sim` does and print its Plan's memory per device, per "
                   "pipeline stage: the arena and the planned peak split into weights, "
                   "gradients, optimizer state, activations and communication buffers.");
  AddModelFlags(parser);
  AddClusterFlags(parser);
  AddRanksFlag(parser);
  AddFoldFlag(parser);
  parser.Optional("json", "FILE", "write every device's figures as JSON")
      .Optional("top", "N",
                "also list each stage's fullest device's N largest registers: producer, what "
                "they hold, bytes, slots, and whether they share bytes in a chain")
      .Epilog(
          "example:\n  twinflow memory --model gpt --layers 4 --strategy tp=4,pp=2,mb=4 "
          "--cluster dgx-a100\n");
  const ParsedArgs parsed = parser.Parse(args);
  if (parsed.help()) {
    out << parser.Usage();
    return 0;
  }
  return Report(parser, args, out);
}

}  // namespace twinflow::launcher
