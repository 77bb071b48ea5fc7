#include "launcher/model_args.h"

#include "engine/core/error.h"
#include "engine/graph/optimizer.h"
#include "engine/plan/plan_io.h"

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
                                   const graph::OpRegistry& registry, int64_t devices_per_rank,
                                   const sbp::AlphaBetaConfig* cluster_cost) {
  const sbp::AlphaBetaCostModel cost(cluster_cost && !args.Given("cost-model")
                                         ? *cluster_cost
                                         : CostConfigFromArgs(args, "cpu-host"));
  compiler::CompileOptions options;
  options.lower.fetches = {model.loss};
  options.lower.micro_batches = model.strategy.micro_batches;
  options.lower.one_f_one_b = model.strategy.schedule == models::Schedule::kOneFOneB;
  options.lower.devices_per_rank = devices_per_rank;
  return compiler::Compile(model.graph, registry, cost, options);
}

namespace {

const plan::Binding* FindBinding(const google::protobuf::RepeatedPtrField<plan::Binding>& bindings,
                                 const std::string& name) {
  for (const plan::Binding& b : bindings) {
    if (b.name() == name) return &b;
  }
  return nullptr;
}

std::string DescText(const plan::TensorDesc& desc) {
  std::string text = desc.dtype() + "[";
  for (int i = 0; i < desc.shape_size(); ++i) text += (i ? "," : "") + std::to_string(desc.shape(i));
  return text + "]";
}

}  // namespace

plan::Plan LoadPlanForModel(const std::string& path, const models::BuiltModel& model) {
  plan::Plan plan = plan::LoadPlan(path);
  const std::string what = "plan " + path + " was not compiled for this model: ";
  if (plan.pieces_per_step() != model.strategy.micro_batches) {
    throw InvalidArgumentError(what + "it has " + std::to_string(plan.pieces_per_step()) +
                               " micro-batches per step, the strategy " +
                               std::to_string(model.strategy.micro_batches));
  }
  // Feeds and variables: the same names with the same logical shapes, in both directions.
  std::vector<std::pair<std::string, const plan::Binding*>> wanted;
  for (const std::string& feed : model.feeds) wanted.emplace_back(feed, FindBinding(plan.feeds(), feed));
  for (const graph::OpNode& op : model.graph.ops()) {
    if (op.type == "variable") wanted.emplace_back(op.name, FindBinding(plan.variables(), op.name));
  }
  if (wanted.size() != static_cast<size_t>(plan.feeds_size() + plan.variables_size())) {
    throw InvalidArgumentError(what + "it has " + std::to_string(plan.feeds_size()) + " feeds and " +
                               std::to_string(plan.variables_size()) + " variables, the model " +
                               std::to_string(model.feeds.size()) + " feeds and " +
                               std::to_string(wanted.size() - model.feeds.size()) + " variables");
  }
  for (const auto& [name, binding] : wanted) {
    if (binding == nullptr) throw InvalidArgumentError(what + "it has no binding '" + name + "'");
    const graph::TensorMeta& meta =
        model.graph.tensor(model.graph.op(*model.graph.FindOp(name)).outputs[0]).meta;
    plan::TensorDesc want;
    for (int64_t d : meta.shape.dims()) want.add_shape(d);
    want.set_dtype(DTypeName(meta.dtype));
    if (DescText(binding->logical()) != DescText(want)) {
      throw InvalidArgumentError(what + "its '" + name + "' is " + DescText(binding->logical()) +
                                 ", the model's " + DescText(want));
    }
  }
  const std::string& loss = model.graph.tensor(model.loss).name;
  if (FindBinding(plan.fetches(), loss) == nullptr) {
    throw InvalidArgumentError(what + "it does not fetch the loss '" + loss + "'");
  }
  return plan;
}

}  // namespace twinflow::launcher
