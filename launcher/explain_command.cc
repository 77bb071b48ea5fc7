#include "launcher/explain_command.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <map>
#include <sstream>

#include "engine/compiler/parallelism.h"
#include "engine/compiler/sbp_search.h"
#include "engine/core/error.h"
#include "engine/core/text_format.h"
#include "engine/ops/builtin_ops.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "engine/sbp/slicing.h"
#include "launcher/model_args.h"

namespace twinflow::launcher {
namespace {

constexpr size_t kExactSearchMaxOps = 3000;

ArgParser MakeParser() {
  ArgParser parser("twinflow explain",
                   "Search the layouts of a model and list its signatures, boxings and memory.");
  AddModelFlags(parser);
  parser.Optional("memory-limit", "GIB", "per-device memory limit, in GiB")
      .Optional("search", "METHOD",
                "exact (min-sum over the whole graph) or propagate (topological, linear); "
                "default: exact up to 3000 ops, propagate beyond")
      .Switch("summary", "print the totals and memory only, not the per-op tables")
      .Epilog(
          "examples:\n"
          "  twinflow explain --model gpt --layers 2 --devices 8 --strategy dp=2,tp=4\n"
          "  twinflow explain --model gpt --layers 2 --devices 8 --strategy auto --hierarchy 2,4\n"
          "  twinflow explain --model gpt --preset gpt3-175b --devices 1024 "
          "--strategy dp=8,tp=8,pp=16 --summary\n");
  return parser;
}

void PrintSignatures(const graph::LogicalGraph& graph, const compiler::SbpAssignment& a,
                     std::ostream& out) {
  TextTable table({"op", "type", "placement", "signature (inputs -> outputs)"});
  for (const graph::OpNode& op : graph.ops()) {
    table.Add({op.name, op.type, op.placement.ToString(), a.signatures[op.id].ToString()});
  }
  out << "signatures (" << graph.ops().size() << " ops):\n";
  table.Print(out);
}

void PrintBoxings(const graph::LogicalGraph& graph, const compiler::SbpAssignment& a,
                  std::ostream& out) {
  TextTable table({"consumer op", "tensor", "from", "to", "steps", "bytes moved", "est. time"});
  for (const compiler::BoxingEdge& edge : a.boxings) {
    std::string steps;
    for (const sbp::BoxingStep& step : edge.plan->steps) {
      steps += (steps.empty() ? "" : "+") + std::string(sbp::BoxingStepKindName(step.kind));
    }
    table.Add({graph.op(edge.consumer).name, graph.tensor(edge.tensor).name,
               edge.plan->src.ToString(), edge.plan->dst.ToString(), steps,
               FormatBytes(edge.plan->cross_device_bytes()), FormatSeconds(edge.plan->time())});
  }
  out << "boxings (" << a.boxings.size() << "):\n";
  table.Print(out);
}

// An estimate before compiling: parameter bytes (variables: weights and optimizer state) and
// activation bytes (every other tensor: activations and gradients) on each device, each
// tensor's physical slice summed as if all lived at once. `twinflow memory` gives the Plan's.
void PrintMemory(const graph::LogicalGraph& graph, const compiler::SbpAssignment& a,
                 std::ostream& out) {
  std::map<sbp::DeviceId, std::pair<int64_t, int64_t>> bytes;  // parameters, activations
  for (const graph::OpNode& op : graph.ops()) {
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      const graph::TensorNode& t = graph.tensor(op.outputs[o]);
      const sbp::Layout layout{op.placement, a.signatures[op.id].outputs[o]};
      for (int64_t d = 0; d < op.placement.size(); ++d) {
        const int64_t b =
            sbp::PhysicalRegion(t.meta.shape, layout, d).numel() * DTypeSize(t.meta.dtype);
        auto& entry = bytes[op.placement.device(d)];
        (op.type == "variable" ? entry.first : entry.second) += b;
      }
    }
  }
  out << "memory per device, estimated: every tensor's slice summed, no lifetimes (parameters "
         "incl. optimizer state | activations incl. gradients; `twinflow memory` gives the "
         "compiled Plan's arena):\n";
  if (bytes.size() <= 16) {
    TextTable table({"device", "parameters", "activations", "total"});
    for (const auto& [device, b] : bytes) {
      table.Add({device.ToString(), FormatBytes(b.first), FormatBytes(b.second),
                 FormatBytes(b.first + b.second)});
    }
    table.Print(out);
    return;
  }
  int64_t min_total = -1, max_total = 0;
  sbp::DeviceId fullest;
  for (const auto& [device, b] : bytes) {
    const int64_t total = b.first + b.second;
    if (min_total < 0 || total < min_total) min_total = total;
    if (total > max_total) {
      max_total = total;
      fullest = device;
    }
  }
  const auto& f = bytes[fullest];
  out << "  " << bytes.size() << " devices; total from " << FormatBytes(min_total) << " to "
      << FormatBytes(max_total) << "; fullest " << fullest.ToString() << ": parameters "
      << FormatBytes(f.first) << ", activations " << FormatBytes(f.second) << "\n";
}

}  // namespace

int RunExplainCommand(const std::vector<std::string>& args, std::ostream& out) {
  const ArgParser parser = MakeParser();
  const ParsedArgs parsed = parser.Parse(args);
  if (parsed.help()) {
    out << parser.Usage();
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  const graph::OpRegistry registry = ops::BuiltinOps();
  const models::BuiltModel model = BuildModelFromArgs(parsed, registry);
  const sbp::AlphaBetaCostModel cost(CostConfigFromArgs(parsed, "accelerator"));
  compiler::SbpSearchOptions options;
  // The exact search prices every signature pair of every edge; past a few thousand ops
  // (GPT-3 has 13,000) propagation from the pins is the practical choice.
  options.method = model.graph.ops().size() <= kExactSearchMaxOps
                       ? compiler::SbpSearchOptions::Method::kExact
                       : compiler::SbpSearchOptions::Method::kPropagate;
  if (parsed.Given("search")) {
    const std::string& method = parsed.Get("search");
    if (method != "exact" && method != "propagate") {
      throw InvalidArgumentError("--search: expected exact or propagate, got '" + method + "'");
    }
    options.method = method == "exact" ? compiler::SbpSearchOptions::Method::kExact
                                       : compiler::SbpSearchOptions::Method::kPropagate;
  }
  if (parsed.Given("memory-limit")) {
    options.memory_limit = parsed.GetPositiveDouble("memory-limit") * 1024.0 * 1024.0 * 1024.0;
  }
  options.boxing_detail = sbp::BoxingDetail::kPriceOnly;  // the report lists no transfers
  options.progress = PassProgress("SBP search (ops priced, then boxed)");
  const compiler::SbpAssignment assignment =
      compiler::SearchSbp(model.graph, registry, cost, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  out << "model " << parsed.Get("model") << " on " << model.devices << " devices, strategy "
      << model.strategy.ToString() << ", optimizer " << models::OptimizerLabel(model) << ": "
      << model.graph.ops().size() << " ops, " << model.graph.tensors().size() << " tensors\n";
  if (!parsed.Given("summary")) {
    PrintSignatures(model.graph, assignment, out);
    PrintBoxings(model.graph, assignment, out);
  }
  out << "parallelism of the forward ops, by mesh axis"
      << (model.strategy.automatic ? "" : " (0: dp, 1: tp)") << ":\n"
      << compiler::ParallelismTable(
             compiler::ParallelismByFamily(model.graph, registry, assignment));
  PrintMemory(model.graph, assignment, out);
  out << "search: "
      << (options.method == compiler::SbpSearchOptions::Method::kExact
              ? (assignment.exact ? "exact (optimal)" : "exact search, fell back")
              : "propagated from the strategy's pins")
      << "; estimated compute " << FormatSeconds(assignment.compute_time) << " + boxing "
      << FormatSeconds(assignment.boxing_time) << " over " << assignment.boxings.size()
      << " boxings (serial sums); explained in " << std::fixed << std::setprecision(2) << seconds
      << " s\n";
  return 0;
}

}  // namespace twinflow::launcher
