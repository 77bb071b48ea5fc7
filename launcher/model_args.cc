#include "launcher/model_args.h"

#include "engine/core/error.h"
#include "engine/graph/optimizer.h"

namespace twinflow::launcher {
namespace {

constexpr int64_t kMaxExtent = int64_t{1} << 40;

// Runs `parse` and prefixes any error with the flag it came from.
template <typename Fn>
auto FromFlag(const std::string& flag, Fn parse) {
  try {
    return parse();
  } catch (const Error& e) {
    RethrowPrefixed(e, "--" + flag + ": ");
  }
}

}  // namespace

void AddModelFlags(ArgParser& parser) {
  parser.Required("model", "NAME", "mlp or gpt")
      .Optional("devices", "N", "number of devices", "1")
      .Optional("strategy", "TEXT", "dp=2,tp=2,pp=1,mb=4,schedule=1f1b or auto", "auto")
      .Optional("hierarchy", "DIMS", "mesh shape for --strategy auto, e.g. 2,4")
      .Optional("layers", "N", "gpt: transformer blocks", "2")
      .Optional("hidden", "N", "gpt: hidden size", "64")
      .Optional("heads", "N", "gpt: attention heads", "4")
      .Optional("sequence", "N", "gpt: tokens per sample", "32")
      .Optional("vocab", "N", "gpt: vocabulary size", "128")
      .Optional("batch", "N", "samples per step (mlp default 512, gpt default 8)")
      .Optional("widths", "LIST", "mlp: input,hidden...,classes", "784,4096,4096,10")
      .Optional("preset", "NAME", "gpt: gpt3-175b sets the GPT-3 175B sizes")
      .Optional("optimizer", "SPEC", "sgd, sgd:lr=0.1,momentum=0.9, adam:lr=1e-3 or adamw", "sgd")
      .Optional("seed", "N", "initialisation seed", "1")
      .Optional("devices-per-node", "N", "devices sharing a node's fast fabric", "8")
      .Optional("cost-model", "NAME",
                "accelerator (GPU nodes; explain's default) or cpu-host (this machine's cores; "
                "compile's and run's default)")
      .Switch("inference", "the forward graph only: no autograd, no optimizer");
}

models::BuiltModel BuildModelFromArgs(const ParsedArgs& args, const graph::OpRegistry& registry,
                                      bool whole_batch) {
  models::BuildOptions options;
  options.devices = args.GetInt("devices", 1, 1 << 20);
  options.strategy = FromFlag("strategy", [&] { return models::ParseStrategy(args.Get("strategy")); });
  if (args.Given("hierarchy")) {
    if (!options.strategy.automatic) {
      throw InvalidArgumentError("--hierarchy applies to --strategy auto only");
    }
    options.strategy.hierarchy = FromFlag("hierarchy", [&] { return ParseShape(args.Get("hierarchy")); });
  }
  if (whole_batch) options.strategy.micro_batches = 1;
  options.training = !args.Given("inference");
  options.optimizer =
      FromFlag("optimizer", [&] { return graph::ParseOptimizer(args.Get("optimizer")); });
  options.seed = static_cast<uint64_t>(args.GetInt("seed", 0, kMaxExtent));
  const std::string& model = args.Get("model");
  if (model == "mlp") {
    models::MlpConfig config;
    config.widths = FromFlag("widths", [&] { return ParseShape(args.Get("widths")).dims(); });
    if (args.Given("batch")) config.batch = args.GetInt("batch", 1, kMaxExtent);
    return FromFlag("model", [&] { return models::BuildMlp(registry, config, options); });
  }
  if (model == "gpt") {
    models::GptConfig config;
    if (args.Given("preset")) {
      if (args.Get("preset") != "gpt3-175b") {
        throw InvalidArgumentError("--preset: unknown preset '" + args.Get("preset") +
                                   "' (expected gpt3-175b)");
      }
      config = models::GptConfig::Gpt3_175B();
    }
    const auto size = [&](const char* flag, int64_t& field) {
      if (!args.Given(flag) && args.Given("preset")) return;
      field = args.GetInt(flag, 1, kMaxExtent);
    };
    size("layers", config.layers);
    size("hidden", config.hidden);
    size("heads", config.heads);
    size("sequence", config.sequence);
    size("vocab", config.vocab);
    if (args.Given("batch")) config.batch = args.GetInt("batch", 1, kMaxExtent);
    return FromFlag("model", [&] { return models::BuildGpt(registry, config, options); });
  }
  throw InvalidArgumentError("--model: unknown model '" + model + "' (expected mlp or gpt)");
}

sbp::AlphaBetaConfig CostConfigFromArgs(const ParsedArgs& args, const std::string& fallback) {
  sbp::AlphaBetaConfig config = FromFlag("cost-model", [&] {
    return sbp::AlphaBetaPreset(args.Given("cost-model") ? args.Get("cost-model") : fallback);
  });
  config.devices_per_node = args.GetInt("devices-per-node", 1, 1 << 20);
  return config;
}

compiler::Compiled CompileFromArgs(const models::BuiltModel& model, const ParsedArgs& args,
                                   const graph::OpRegistry& registry) {
  const sbp::AlphaBetaCostModel cost(CostConfigFromArgs(args, "cpu-host"));
  compiler::CompileOptions options;
  options.lower.fetches = {model.loss};
  options.lower.micro_batches = model.strategy.micro_batches;
  options.lower.one_f_one_b = model.strategy.schedule == models::Schedule::kOneFOneB;
  return compiler::Compile(model.graph, registry, cost, options);
}

}  // namespace twinflow::launcher
