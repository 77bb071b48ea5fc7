#include "launcher/boxing_command.h"

#include <limits>

#include "engine/sbp/alpha_beta_cost_model.h"
#include "engine/sbp/boxing_planner.h"
#include "launcher/cli_args.h"

namespace twinflow::launcher {
namespace {

// Re-throws an engine error with `context` in front, keeping its kind (and so the exit code).
[[noreturn]] void Rethrow(const Error& error, const std::string& context) {
  throw Error(error.kind(), context + ": " + error.message());
}

// Rejects tensors whose byte count overflows int64, so that no later product can wrap.
void CheckSize(const Shape& shape, DType dtype, const std::string& text) {
  int64_t bytes = DTypeSize(dtype);
  for (int64_t d : shape.dims()) {
    if (d != 0 && bytes > std::numeric_limits<int64_t>::max() / 4 / d) {
      throw ShapeError("--shape \"" + text + "\" is too large: its bytes overflow a 64-bit count");
    }
    bytes *= d;
  }
}

ArgParser MakeBoxingParser() {
  ArgParser parser("twinflow boxing",
                   "Plans the cheapest boxing (resharding) of one tensor from one layout to "
                   "another\nand prints its steps: the collective or copy, the device groups, "
                   "the bytes\nover each class of link and the estimated time.");
  parser.Required("from", "LAYOUT", "source layout, e.g. \"cpu:0-3 [2,2] (S(0),B)\"")
      .Required("to", "LAYOUT", "destination layout, e.g. \"cpu:4-5 [2] P\"")
      .Required("shape", "DIMS", "logical tensor shape, e.g. 7,5")
      .Optional("dtype", "DTYPE", "element type: f32 f64 i32 i64 bf16 f16", "f32")
      .Optional("devices-per-node", "N",
                "consecutive device ids per node in the alpha-beta cost model", "8")
      .Epilog(
          "A layout is a placement followed by an SBP: \"cpu:0-3 [2,2] (S(0),B)\" holds the\n"
          "tensor on cpu devices 0..3 arranged as a 2x2 mesh, split along tensor axis 0 over\n"
          "mesh axis 0 and broadcast over mesh axis 1. docs/sbp.md has the full syntax.\n\n"
          "example:\n"
          "  twinflow boxing --from \"cpu:0-3 [2,2] (S(0),B)\" --to \"cpu:4-5 [2] P\" "
          "--shape 7,5\n");
  return parser;
}

}  // namespace

sbp::Layout ParseLayoutArg(const std::string& flag, const std::string& text) {
  try {
    return sbp::ParseLayout(text);
  } catch (const Error& error) {
    Rethrow(error, "--" + flag + " \"" + text + "\"");
  }
}

sbp::BoxingPlan PlanQuery(const BoxingQuery& query) {
  const std::pair<const char*, const sbp::Layout*> layouts[] = {{"from", &query.from},
                                                                {"to", &query.to}};
  for (const auto& [flag, layout] : layouts) {
    try {
      layout->Validate(query.shape);
    } catch (const Error& error) {
      Rethrow(error, std::string("--") + flag);  // the message names the layout and shape
    }
  }
  sbp::AlphaBetaConfig config;
  config.devices_per_node = query.devices_per_node;
  const sbp::AlphaBetaCostModel cost_model(config);
  return sbp::PlanBoxing(query.shape, query.dtype, query.from, query.to, cost_model);
}

void PrintPlan(const sbp::BoxingPlan& plan, std::ostream& out) {
  const std::string table = plan.ToString();
  out << table;
  if (!table.empty() && table.back() != '\n') out << "\n";
}

int RunBoxingCommand(const std::vector<std::string>& args, std::ostream& out) {
  const ArgParser parser = MakeBoxingParser();
  const ParsedArgs parsed = parser.Parse(args);
  if (parsed.help()) {
    out << parser.Usage();
    return 0;
  }
  BoxingQuery query;
  const std::string shape_text = parsed.Get("shape");
  try {
    query.shape = ParseShape(shape_text);
  } catch (const Error& error) {
    Rethrow(error, "--shape");
  }
  const std::string dtype_text = parsed.Get("dtype");
  try {
    query.dtype = ParseDType(dtype_text);
  } catch (const Error& error) {
    Rethrow(error, "--dtype");
  }
  CheckSize(query.shape, query.dtype, shape_text);
  query.from = ParseLayoutArg("from", parsed.Get("from"));
  query.to = ParseLayoutArg("to", parsed.Get("to"));
  query.devices_per_node = parsed.GetInt("devices-per-node", 1, int64_t{1} << 20);
  const sbp::BoxingPlan plan = PlanQuery(query);
  out << "cost model: alpha-beta, " << query.devices_per_node << " devices per node\n";
  PrintPlan(plan, out);
  return 0;
}

}  // namespace twinflow::launcher
