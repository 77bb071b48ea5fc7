#include "launcher/model_args.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <string>

#include "engine/core/error.h"
#include "engine/core/text_format.h"
#include "engine/graph/optimizer.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_io.h"
#include "models/hf_config.h"
#include "planner/compile_model.h"

namespace twinflow::launcher {
namespace {

constexpr int64_t kMaxExtent = int64_t{1} << 40;

}  // namespace

void AddModelFlags(ArgParser& parser) {
  parser.Required("model", "NAME", "mlp, gpt or llama")
      .Optional("devices", "N",
                "number of devices (default: the product of the strategy's degrees; a missing "
                "dp is inferred from the devices)")
      .Optional("strategy", "TEXT",
                "dp=2,tp=2,pp=1,mb=4,schedule=1f1b, a degree written auto (tp=auto), or auto",
                "auto")
      .Optional("hierarchy", "DIMS", "mesh shape for --strategy auto, e.g. 2,4")
      .Optional("layers", "N", "gpt, llama: transformer blocks (default 2)")
      .Optional("hidden", "N", "gpt, llama: hidden size (default 64)")
      .Optional("heads", "N", "gpt, llama: attention heads (default 4)")
      .Optional("kv-heads", "N",
                "gpt, llama: key-value heads, fewer than heads for grouped-query attention "
                "(default: gpt one per head, llama 2)")
      .Optional("ffn", "N",
                "gpt, llama: the MLP's inner width (default: gpt 4 * hidden, llama 176)")
      .Optional("sequence", "N", "gpt, llama: tokens per sample (default 32)")
      .Optional("vocab", "N", "gpt, llama: vocabulary size (default 128)")
      .Optional("attention", "KIND",
                "gpt, llama: unfused (a graph of small ops) or fused (one fused_attention op, "
                "O(sequence) memory)",
                "unfused")
      .Optional("hf-config", "FILE",
                "gpt, llama: the sizes of a Hugging Face config.json (model_type gpt2, llama "
                "or mistral); flags given override them")
      .Optional("batch", "N", "samples per step (mlp default 512, gpt and llama default 8)")
      .Optional("global-batch-size", "N", "Megatron's name for --batch: samples per step")
      .Optional("micro-batch-size", "N",
                "samples per micro-batch on each data-parallel replica (Megatron's meaning): "
                "sets mb = batch / (micro-batch-size * dp)")
      .Optional("widths", "LIST", "mlp: input,hidden...,classes", "784,4096,4096,10")
      .Optional("preset", "NAME",
                "the published sizes of gpt3-175b (gpt), or llama2-7b, llama2-13b, llama2-70b, "
                "llama3-8b, llama3-70b, llama3-405b (llama)")
      .Optional(
          "optimizer", "SPEC",
          "sgd, sgd:lr=0.1,momentum=0.9, adam:lr=1e-3 or adamw (default: adamw for gpt and llama, "
          "sgd for mlp)")
      .Optional("seed", "N", "initialisation seed", "1")
      .Optional("device", "TYPE",
                "cpu or cuda: the device type of every placement (cuda runs need a GPU build "
                "and a GPU; compile, explain and sim need neither)",
                "cpu")
      .Optional("devices-per-node", "N", "devices sharing a node's fast fabric", "8")
      .Optional("cost-model", "NAME",
                "accelerator (GPU nodes; explain's default) or cpu-host (this machine's cores; "
                "compile's and run's default)")
      .Switch("inference", "the forward graph only: no autograd, no optimizer")
      .Optional("megatron-args", "TEXT",
                "a Megatron-LM pretrain_gpt.py command line: its model, batch and strategy as "
                "these flags (docs/models.md)")
      .Optional("torchtitan", "FILE",
                "a torchtitan train config (.toml): its model, batch and strategy as these flags");
}

int64_t DevicesFromArgs(const ParsedArgs& args, const parallel::Strategy& strategy,
                        int64_t fallback) {
  if (args.Given("devices")) return args.GetInt("devices", 1, 1 << 20);
  const bool open = strategy.automatic ? strategy.hierarchy.rank() == 0 : strategy.InfersDegree();
  return open && fallback > 0 ? fallback : strategy.DefaultDevices();
}

parallel::Strategy StrategyFromArgs(const ParsedArgs& args, int64_t fallback_devices) {
  parallel::Strategy strategy =
      FromFlag("strategy", [&] { return parallel::ParseStrategy(args.Get("strategy")); });
  if (args.Given("hierarchy")) {
    if (!strategy.automatic) {
      throw InvalidArgumentError("--hierarchy applies to --strategy auto only");
    }
    strategy.hierarchy = FromFlag("hierarchy", [&] { return ParseShape(args.Get("hierarchy")); });
  }
  const int64_t devices = DevicesFromArgs(args, strategy, fallback_devices);
  const std::string source = args.Given("devices") ? " (--devices " + std::to_string(devices) + ")"
                                                   : " (" + std::to_string(devices) + " devices)";
  try {
    strategy.Resolve(devices);
  } catch (const Error& e) {
    throw InvalidArgumentError("--strategy " + args.Get("strategy") + source + ": " + e.message());
  }
  return strategy;
}

namespace {

// --batch or --global-batch-size (the same thing; both given must agree); 0: the model's default.
int64_t GlobalBatchFromArgs(const ParsedArgs& args) {
  const int64_t batch = args.Given("batch") ? args.GetInt("batch", 1, kMaxExtent) : 0;
  if (!args.Given("global-batch-size")) return batch;
  const int64_t global = args.GetInt("global-batch-size", 1, kMaxExtent);
  if (batch && batch != global) {
    throw InvalidArgumentError("--global-batch-size " + std::to_string(global) +
                               " disagrees with --batch " + std::to_string(batch) +
                               " (they name the same thing; give one)");
  }
  return global;
}

// --micro-batch-size M: mb = batch / (M * dp), as Megatron counts micro-batches.
void ApplyMicroBatchSize(const ParsedArgs& args, int64_t batch, parallel::Strategy& strategy) {
  if (!args.Given("micro-batch-size")) return;
  const int64_t size = args.GetInt("micro-batch-size", 1, kMaxExtent);
  if (strategy.automatic) {
    throw InvalidArgumentError(
        "--micro-batch-size needs a dp/tp/pp strategy (it counts per "
        "data-parallel replica); with auto give mb= in --strategy");
  }
  const int64_t replica = size * strategy.dp;
  if (batch % replica != 0) {
    throw InvalidArgumentError(
        "--micro-batch-size " + std::to_string(size) + ": the batch of " + std::to_string(batch) +
        " is not a multiple of micro-batch-size * dp = " + std::to_string(replica));
  }
  if (strategy.Gives(parallel::Field::kMb) && strategy.micro_batches != batch / replica) {
    throw InvalidArgumentError("--micro-batch-size " + std::to_string(size) +
                               " makes mb=" + std::to_string(batch / replica) +
                               " but --strategy says mb=" + std::to_string(strategy.micro_batches));
  }
  strategy.micro_batches = batch / replica;
  parallel::CheckInterleaving(strategy);
}

// A decoder's config: the family's default, a preset or a Hugging Face config, then the flags.
models::GptConfig DecoderConfigFromArgs(const ParsedArgs& args, models::DecoderFamily family) {
  if (args.Given("preset") && args.Given("hf-config")) {
    throw InvalidArgumentError("--preset and --hf-config both set the sizes; give one");
  }
  models::GptConfig config =
      args.Given("hf-config")
          ? FromFlag("hf-config",
                     [&] { return models::ReadHfConfig(args.Get("hf-config"), family); })
          : FromFlag("preset", [&] {
              return models::DecoderConfig(family, args.Given("preset") ? args.Get("preset") : "");
            });
  const auto size = [&](const char* flag, int64_t& field) {
    if (args.Given(flag)) field = args.GetInt(flag, 1, kMaxExtent);
  };
  size("layers", config.layers);
  size("hidden", config.hidden);
  size("heads", config.heads);
  size("kv-heads", config.kv_heads);
  size("ffn", config.ffn);
  size("sequence", config.sequence);
  size("vocab", config.vocab);
  config.attention =
      FromFlag("attention", [&] { return ops::ParseAttentionKind(args.Get("attention")); });
  return config;
}

models::BuiltModel BuildGptFromArgs(const ParsedArgs& args, const graph::OpRegistry& registry,
                                    models::BuildOptions& options, int64_t batch, bool whole_batch,
                                    models::DecoderFamily family,
                                    const planner::ModelExtent& extent) {
  models::GptConfig config = DecoderConfigFromArgs(args, family);
  if (batch) config.batch = batch;
  if (extent.layers) config.layers = extent.layers;
  if (extent.batch) config.batch = extent.batch;
  ApplyMicroBatchSize(args, config.batch, options.strategy);
  if (whole_batch) options.strategy.micro_batches = 1;
  return FromFlag("model", [&] { return models::BuildGpt(registry, config, options); });
}

models::BuiltModel BuildModelAt(const ParsedArgs& args, const graph::OpRegistry& registry,
                                bool whole_batch, int64_t fallback_devices,
                                const planner::ModelExtent& extent) {
  models::BuildOptions options;
  options.strategy = StrategyFromArgs(args, fallback_devices);
  options.devices = options.strategy.automatic
                        ? DevicesFromArgs(args, options.strategy, fallback_devices)
                        : options.strategy.devices();
  options.training = !args.Given("inference");
  if (args.Given("optimizer")) {
    options.optimizer =
        FromFlag("optimizer", [&] { return graph::ParseOptimizer(args.Get("optimizer")); });
  }
  options.seed = static_cast<uint64_t>(args.GetInt("seed", 0, kMaxExtent));
  options.device = FromFlag("device", [&] { return ParseDeviceType(args.Get("device")); });
  const int64_t batch = GlobalBatchFromArgs(args);
  const std::string& model = args.Get("model");
  if (model == "mlp") {
    models::MlpConfig config;
    config.widths = FromFlag("widths", [&] { return ParseShape(args.Get("widths")).dims(); });
    if (batch) config.batch = batch;
    ApplyMicroBatchSize(args, config.batch, options.strategy);
    if (whole_batch) options.strategy.micro_batches = 1;
    return FromFlag("model", [&] { return models::BuildMlp(registry, config, options); });
  }
  const models::DecoderFamily family =
      FromFlag("model", [&] { return models::ParseDecoderFamily(model); });
  return BuildGptFromArgs(args, registry, options, batch, whole_batch, family, extent);
}

}  // namespace

models::BuiltModel BuildModelFromArgs(const ParsedArgs& args, const graph::OpRegistry& registry,
                                      bool whole_batch, int64_t fallback_devices) {
  return BuildModelAt(args, registry, whole_batch, fallback_devices, {});
}

models::BuiltModel BuildModelFromArgs(const ParsedArgs& args, const graph::OpRegistry& registry,
                                      const planner::ModelExtent& extent) {
  return BuildModelAt(args, registry, false, 0, extent);
}

planner::TunedModel TunedModelFromArgs(const ParsedArgs& args) {
  planner::TunedModel extent;
  const int64_t batch = GlobalBatchFromArgs(args);
  const std::string& model = args.Get("model");
  if (model == "mlp") {
    extent.batch = batch ? batch : models::MlpConfig{}.batch;
    return extent;
  }
  const models::GptConfig config = DecoderConfigFromArgs(
      args, FromFlag("model", [&] { return models::ParseDecoderFamily(model); }));
  extent.batch = batch ? batch : config.batch;
  extent.layers = config.layers;
  extent.decoder = true;
  extent.fused_attention = config.attention == ops::AttentionKind::kFused;
  extent.attention_given = args.Given("attention");
  return extent;
}

std::string OptimizerLabelFromArgs(const ParsedArgs& args) {
  if (args.Given("inference")) return "none (inference)";
  return graph::OptimizerText(
      args.Given("optimizer")
          ? FromFlag("optimizer", [&] { return graph::ParseOptimizer(args.Get("optimizer")); })
          : models::DefaultOptimizer(args.Get("model")));
}

sbp::AlphaBetaConfig CostConfigFromArgs(const ParsedArgs& args, const std::string& fallback) {
  sbp::AlphaBetaConfig config = FromFlag("cost-model", [&] {
    return sbp::AlphaBetaPreset(args.Given("cost-model") ? args.Get("cost-model") : fallback);
  });
  config.devices_per_node = args.GetInt("devices-per-node", 1, 1 << 20);
  return config;
}

std::function<void(int64_t, int64_t)> PassProgress(const std::string& pass) {
  using Clock = std::chrono::steady_clock;
  auto start = std::make_shared<Clock::time_point>(Clock::now());
  auto shown = std::make_shared<double>(0);
  return [pass, start, shown](int64_t done, int64_t total) {
    if (done == 0) {
      *start = Clock::now();
      *shown = 0;
      return;
    }
    const double wall = std::chrono::duration<double>(Clock::now() - *start).count();
    const double part =
        static_cast<double>(done) / static_cast<double>(std::max<int64_t>(1, total));
    if (wall < 5 || wall - *shown < 5 || part < 0.05) return;  // too early for a fair pace
    *shown = wall;
    std::cerr << "  ... " << pass << ": " << done << " of " << total << ", " << FormatSeconds(wall)
              << " so far, about " << FormatSeconds(wall * (1 - part) / part) << " left\n";
  };
}

compiler::Compiled CompileFromArgs(const models::BuiltModel& model, const ParsedArgs& args,
                                   const graph::OpRegistry& registry, int64_t devices_per_rank,
                                   const sbp::AlphaBetaConfig* cluster_cost,
                                   plan::DeviceFold fold) {
  const sbp::AlphaBetaConfig cost = cluster_cost && !args.Given("cost-model")
                                        ? *cluster_cost
                                        : CostConfigFromArgs(args, "cpu-host");
  planner::ModelCompileOptions options;
  options.devices_per_rank = devices_per_rank;
  options.fold = fold;
  options.search.progress = PassProgress("SBP search (ops priced, then boxed)");
  options.lower_progress = PassProgress("lowering (ops)");
  return planner::CompileModel(model, registry, cost, options);
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
  std::string text = plan::EnumName(desc.dtype()) + "[";
  for (int i = 0; i < desc.shape_size(); ++i)
    text += (i ? "," : "") + std::to_string(desc.shape(i));
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
  for (const std::string& feed : model.feeds)
    wanted.emplace_back(feed, FindBinding(plan.feeds(), feed));
  for (const graph::OpNode& op : model.graph.ops()) {
    if (op.type == "variable") wanted.emplace_back(op.name, FindBinding(plan.variables(), op.name));
  }
  if (wanted.size() != static_cast<size_t>(plan.feeds_size() + plan.variables_size())) {
    throw InvalidArgumentError(what + "it has " + std::to_string(plan.feeds_size()) +
                               " feeds and " + std::to_string(plan.variables_size()) +
                               " variables, the model " + std::to_string(model.feeds.size()) +
                               " feeds and " + std::to_string(wanted.size() - model.feeds.size()) +
                               " variables");
  }
  for (const auto& [name, binding] : wanted) {
    if (binding == nullptr) throw InvalidArgumentError(what + "it has no binding '" + name + "'");
    const graph::TensorMeta& meta =
        model.graph.tensor(model.graph.op(*model.graph.FindOp(name)).outputs[0]).meta;
    plan::TensorDesc want;
    for (int64_t d : meta.shape.dims()) want.add_shape(d);
    want.set_dtype(plan::ToProto(meta.dtype));
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
