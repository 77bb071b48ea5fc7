// The TOML is parsed by toml++ into a table read through TomlKeys (models/torchtitan_keys.h);
// each part of the job is read by one function, with torchtitan's defaults (its JobConfig
// dataclasses) for absent keys, and what none read is reported in `ignored`.
#include "models/torchtitan_config.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/file_io.h"
#include "models/torchtitan_keys.h"

namespace twinflow::models {
namespace {

constexpr int64_t kMaxSize = int64_t{1} << 40;
constexpr int64_t kMaxFileBytes = int64_t{1} << 24;  // a config, not a data set

toml::table ParseFile(const std::string& path) {
  const std::string text = ReadFile(path, kMaxFileBytes);
  try {
    return toml::parse(std::string_view(text), std::string_view(path));
  } catch (const toml::parse_error& e) {
    const toml::source_position at = e.source().begin;
    throw InvalidArgumentError(path + ": line " + std::to_string(at.line) + ", column " +
                               std::to_string(at.column) + ": " + std::string(e.description()));
  }
}

// A degree or size: a positive integer.
int64_t Positive(TomlKeys& keys, const char* section, const char* key, int64_t fallback) {
  const int64_t value = keys.Int(section, key, fallback);
  if (value < 1 || value > kMaxSize) keys.Fail(section, key, "must be a positive integer");
  return value;
}

// The model: a flavor twinflow has a preset for, or torchtitan's debugmodel by its sizes
// (torchtitan/models/llama3: dim 256, 6 layers, 16 heads, vocabulary 2048, FFN 768 from
// multiple_of 256).
void ReadModel(TomlKeys& keys, ImportedJob& job) {
  const std::map<std::string, std::map<std::string, std::string>> kPresets = {
      {"llama3", {{"8B", "llama3-8b"}, {"70B", "llama3-70b"}, {"405B", "llama3-405b"}}},
      {"llama2", {{"7B", "llama2-7b"}, {"13B", "llama2-13b"}, {"70B", "llama2-70b"}}}};
  const std::string name = keys.Text("model", "name", "llama3");
  const std::string flavor = keys.Text("model", "flavor", "debugmodel");
  const auto family = kPresets.find(name);
  if (family == kPresets.end())
    keys.Fail("model", "name", "= \"" + name + "\": twinflow reads llama3 and llama2");
  job.model = "llama";
  const auto preset = family->second.find(flavor);
  if (name == "llama3" && flavor == "debugmodel") {
    job.flags = {{"layers", "6"},    {"hidden", "256"}, {"heads", "16"},
                 {"kv-heads", "16"}, {"ffn", "768"},    {"vocab", "2048"}};
  } else if (preset != family->second.end()) {
    job.flags = {{"preset", preset->second}};
  } else {
    std::string known = name == "llama3" ? "debugmodel" : "";
    for (const auto& [known_flavor, unused] : family->second)
      known += (known.empty() ? "" : ", ") + known_flavor;
    keys.Fail("model", "flavor", "= \"" + flavor + "\": twinflow knows " + name + " " + known);
  }
  const std::string norm = keys.Text("model", "norm_type", "rmsnorm");  // older torchtitan
  if (norm != "rmsnorm" && norm != "fused_rmsnorm") {
    keys.Fail("model", "norm_type", "= \"" + norm + "\": twinflow's llama uses RMSNorm");
  }
  for (const std::string& converter : keys.Strings("model", "converters")) {
    if (converter == "float8" || converter == "mx") {
      keys.Fail("model", "converters",
                "has \"" + converter +
                    "\": " + (converter == "float8" ? "FP8 (float8)" : "MX (mxfp8)") +
                    " training is not supported yet (precision is fp32, bf16 or fp16)");
    }
    keys.Fail("model", "converters", "has \"" + converter + "\", which twinflow does not know");
  }
}

// What twinflow cannot run yet, refused by name; a degree of 1 is no parallelism at all.
void RefuseUnsupported(TomlKeys& keys) {
  const int64_t shard = keys.Int("parallelism", "data_parallel_shard_degree", -1);
  if (shard == -1 || shard > 1) {
    keys.Fail("parallelism", "data_parallel_shard_degree",
              "= " + std::to_string(shard) +
                  (keys.Has("parallelism", "data_parallel_shard_degree")
                       ? ""
                       : " (torchtitan's default: FSDP over the devices left)") +
                  ": FSDP is not supported yet (zero=3 arrives with the FSDP issue); use "
                  "data_parallel_replicate_degree and data_parallel_shard_degree = 1");
  }
  if (shard != 1) keys.Fail("parallelism", "data_parallel_shard_degree", "must be -1 or positive");
  if (Positive(keys, "parallelism", "context_parallel_degree", 1) > 1) {
    keys.Fail("parallelism", "context_parallel_degree",
              "= " + std::to_string(keys.Int("parallelism", "context_parallel_degree", 1)) +
                  ": context parallelism is not supported yet");
  }
  for (const char* key : {"expert_parallel_degree", "expert_tensor_parallel_degree"}) {
    if (Positive(keys, "parallelism", key, 1) > 1) {
      keys.Fail("parallelism", key,
                "= " + std::to_string(keys.Int("parallelism", key, 1)) +
                    ": expert parallelism is not supported yet");
    }
  }
  // Very old torchtitan kept the degrees in [training]: read there they would be lost.
  for (const char* key :
       {"data_parallel_degree", "data_parallel_replicate_degree", "data_parallel_shard_degree",
        "tensor_parallel_degree", "pipeline_parallel_degree", "context_parallel_degree"}) {
    if (keys.Has("training", key))
      keys.Fail("training", key, "belongs in [parallelism] (current torchtitan)");
  }
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The schedule and, for Interleaved1F1B, the model chunks per rank: torchtitan's default for a
// looped schedule is two stages per rank; split points give the stage count (len + 1). Its
// layers-per-stage count differs between versions (whether the embedding and the head count as
// layers), so that one is refused rather than guessed. torch matches schedule names in any case.
void ReadPipeline(TomlKeys& keys, int64_t pp, ImportedJob& job) {
  const std::string schedule = keys.Text("parallelism", "pipeline_parallel_schedule", "1F1B");
  const std::vector<std::string> splits =
      keys.Strings("parallelism", "pipeline_parallel_split_points");
  const bool per_stage = keys.Has("parallelism", "pipeline_parallel_layers_per_stage");
  if (pp == 1) {
    for (const char* key : {"pipeline_parallel_schedule", "pipeline_parallel_split_points",
                            "pipeline_parallel_layers_per_stage"}) {
      if (keys.Has("parallelism", key)) {
        job.ignored.push_back(TomlKeys::Name("parallelism", key) +
                              " (no pipeline: pipeline_parallel_degree is 1)");
      }
    }
    return;
  }
  const std::string name = Lower(schedule);
  if (name == "1f1b" || name == "gpipe") {
    job.strategy.emplace_back("schedule", name);
    if (!splits.empty() || per_stage) {
      job.ignored.push_back(TomlKeys::Name("parallelism", splits.empty()
                                                              ? "pipeline_parallel_layers_per_stage"
                                                              : "pipeline_parallel_split_points") +
                            " (twinflow cuts the layers evenly over the stages)");
    }
    return;
  }
  if (name != "interleaved1f1b") {
    keys.Fail("parallelism", "pipeline_parallel_schedule",
              "= \"" + schedule + "\": twinflow runs 1F1B, GPipe and Interleaved1F1B");
  }
  if (per_stage) {
    keys.Fail("parallelism", "pipeline_parallel_layers_per_stage",
              "with Interleaved1F1B: the stages it makes depend on the torchtitan version (whether "
              "the embedding and head count as layers); give pipeline_parallel_split_points");
  }
  const int64_t stages = splits.empty() ? 2 * pp : static_cast<int64_t>(splits.size()) + 1;
  if (stages % pp != 0 || stages / pp < 2) {
    keys.Fail("parallelism", "pipeline_parallel_split_points",
              "makes " + std::to_string(stages) +
                  " stages: Interleaved1F1B needs a multiple of "
                  "pipeline_parallel_degree " +
                  std::to_string(pp) + ", at least twice it");
  }
  job.strategy.emplace_back("vp", std::to_string(stages / pp));
  job.strategy.emplace_back("schedule", "1f1b");
}

// Sequence, global batch and micro-batch. torchtitan's global batch defaults to
// local_batch_size x the data-parallel degree; a larger one is gradient accumulation. Under a
// pipeline each micro-batch is pipeline_parallel_microbatch_size samples, else the whole
// local batch.
void ReadBatch(TomlKeys& keys, int64_t dp, int64_t pp, ImportedJob& job) {
  const char* local_key =
      keys.Has("training", "local_batch_size") ? "local_batch_size" : "batch_size";
  const int64_t local = Positive(keys, "training", local_key, 8);
  int64_t global = keys.Int("training", "global_batch_size", -1);
  if (global == -1) global = local * dp;
  if (global < 1 || global % (local * dp) != 0) {
    keys.Fail("training", "global_batch_size",
              "= " + std::to_string(global) + " is not a multiple of [training] " + local_key +
                  " x the data-parallel degree (" + std::to_string(local) + " x " +
                  std::to_string(dp) + ")");
  }
  int64_t micro = local;
  if (pp > 1) {
    micro = Positive(keys, "parallelism", "pipeline_parallel_microbatch_size", 1);
    if (local % micro != 0) {
      keys.Fail("parallelism", "pipeline_parallel_microbatch_size",
                "= " + std::to_string(micro) + " does not divide [training] " + local_key + " = " +
                    std::to_string(local));
    }
  } else if (keys.Has("parallelism", "pipeline_parallel_microbatch_size")) {
    job.ignored.push_back(TomlKeys::Name("parallelism", "pipeline_parallel_microbatch_size") +
                          " (no pipeline: pipeline_parallel_degree is 1)");
  }
  job.flags.emplace_back("sequence", std::to_string(Positive(keys, "training", "seq_len", 2048)));
  job.flags.emplace_back("batch", std::to_string(global));
  job.flags.emplace_back("micro-batch-size", std::to_string(micro));
  job.flags.emplace_back("attention", "fused");  // SDPA / flash attention
}

// torchtitan applies mixed_precision_param through FSDP, or through autocast when there is
// neither tensor nor pipeline parallelism (maybe_enable_amp); with TP or PP and no FSDP it
// trains in fp32, and so does this job.
void ReadPrecision(TomlKeys& keys, int64_t tp, int64_t pp, ImportedJob& job) {
  const std::string param = keys.Text("training", "mixed_precision_param", "bfloat16");
  if (param != "bfloat16" && param != "float32") {
    keys.Fail("training", "mixed_precision_param",
              "= \"" + param + "\": expected bfloat16 or float32");
  }
  if ((tp > 1 || pp > 1) && param == "bfloat16") {
    job.ignored.push_back(
        "[training] mixed_precision_param = \"bfloat16\" (torchtitan applies it only under FSDP or "
        "without tensor and pipeline parallelism: this job trains in fp32)");
    job.strategy.emplace_back("precision", "fp32");
    return;
  }
  job.strategy.emplace_back("precision", param == "bfloat16" ? "bf16" : "fp32");
}

// torchtitan's activation checkpointing (default: selective, every 2nd layer). twinflow
// recomputes every layer or none, and its selective recomputes the attention core only.
void ReadRecompute(TomlKeys& keys, ImportedJob& job) {
  const std::string mode = keys.Text("activation_checkpoint", "mode", "selective");
  if (mode == "none") return;
  if (mode == "full") {
    job.strategy.emplace_back("recompute", "full");
    return;
  }
  if (mode != "selective") {
    keys.Fail("activation_checkpoint", "mode",
              "= \"" + mode + "\": twinflow has none, selective and full");
  }
  std::string option = "2";
  if (const toml::node* node = keys.Find("activation_checkpoint", "selective_ac_option")) {
    if (node->is_integer())
      option = std::to_string(node->as_integer()->get());
    else if (node->is_string())
      option = node->as_string()->get();
    else
      keys.Fail("activation_checkpoint", "selective_ac_option", "is not \"op\" or a number");
  }
  const std::string shown = "[activation_checkpoint] selective_ac_option = \"" + option + "\"";
  if (option == "op") {
    job.strategy.emplace_back("recompute", "selective");
    job.ignored.push_back(shown +
                          " (torchtitan's per-op policy; twinflow's selective recomputes "
                          "the attention core)");
    return;
  }
  if (option.empty() || !std::all_of(option.begin(), option.end(), ::isdigit) ||
      option.size() > 6 || std::stoi(option) < 1) {
    keys.Fail("activation_checkpoint", "selective_ac_option",
              "= \"" + option + "\": expected \"op\" or a positive number");
  }
  job.strategy.emplace_back("recompute", "full");
  if (option != "1") {
    job.ignored.push_back(shown + " (torchtitan recomputes one layer in " + option +
                          "; twinflow recomputes every layer)");
  }
}

// Why a key twinflow does not read changes nothing it times: by [section] key, then by
// [section] (key "*"); the first match wins.
struct IgnoredRule {
  const char* section;
  const char* key;
  const char* reason;
};
constexpr IgnoredRule kIgnoredRules[] = {
    {"training", "dataset", "data and tokenizer files change no step time"},
    {"training", "dataset_path", "data and tokenizer files change no step time"},
    {"training", "max_norm", "optimizer hyper-parameters change no step time"},
    {"training", "steps", "the run's length changes no step time"},
    {"training", "warmup_steps", "optimizer hyper-parameters change no step time"},
    {"training", "seed", "initialisation and seeds change no step time"},
    {"training", "deterministic", "initialisation and seeds change no step time"},
    {"training", "compile", "torch.compile's fusions are not priced apart"},
    {"training", "gc_freq", "Python garbage collection is not modelled"},
    {"training", "gc_debug", "Python garbage collection is not modelled"},
    {"training", "enable_cpu_offload", "FSDP only"},
    {"training", "mixed_precision_reduce", "FSDP only"},
    {"model", "tokenizer_path", "data and tokenizer files change no step time"},
    {"model", "hf_assets_path", "data and tokenizer files change no step time"},
    {"model", "print_after_conversion", "logging and profiling change no step time"},
    {"parallelism", "fsdp_reshard_after_forward", "FSDP only"},
    {"parallelism", "enable_async_tensor_parallel",
     "asynchronous tensor parallelism (micro-pipelined collectives) is not modelled"},
    {"parallelism", "disable_loss_parallel", "the loss's layout is the SBP search's"},
    {"parallelism", "enable_compiled_autograd", "torch.compile's fusions are not priced apart"},
    {"parallelism", "context_parallel_rotate_method", "context parallelism only"},
    {"activation_checkpoint", "*", "twinflow's recompute has no per-op settings"},
    {"float8", "*", "no effect without converters = [\"float8\"]"},
    {"mx", "*", "no effect without converters = [\"mx\"]"},
    {"compile", "*", "torch.compile's fusions are not priced apart"},
    {"optimizer", "*", "optimizer hyper-parameters change no step time"},
    {"lr_scheduler", "*", "optimizer hyper-parameters change no step time"},
    {"checkpoint", "*", "checkpointing is outside the training step"},
    {"job", "*", "job metadata and output folders change no step time"},
    {"metrics", "*", "logging and profiling change no step time"},
    {"profiling", "*", "logging and profiling change no step time"},
    {"comm", "*", "process setup changes no step time"},
    {"validation", "*", "evaluation is outside the training step"},
};

std::string IgnoredReason(const std::string& section, const std::string& key) {
  for (const IgnoredRule& rule : kIgnoredRules) {
    if (section == rule.section && (key == rule.key || std::string(rule.key) == "*"))
      return rule.reason;
  }
  return "not read by twinflow";
}

void ReadOptimizer(TomlKeys& keys) {
  const std::string name = keys.Text("optimizer", "name", "AdamW");
  if (name != "AdamW" && name != "Adam") {
    keys.Fail("optimizer", "name", "= \"" + name + "\": twinflow times AdamW (or Adam)");
  }
}

}  // namespace

ImportedJob ReadTorchtitanConfig(const std::string& path) {
  const toml::table root = ParseFile(path);
  TomlKeys keys(root, path);
  ImportedJob job;
  job.source = "--torchtitan " + path;
  ReadModel(keys, job);
  RefuseUnsupported(keys);
  ReadOptimizer(keys);
  const bool dp_given = keys.Has("parallelism", "data_parallel_replicate_degree");
  const int64_t dp = Positive(keys, "parallelism", "data_parallel_replicate_degree", 1);
  const int64_t tp = Positive(keys, "parallelism", "tensor_parallel_degree", 1);
  const int64_t pp = Positive(keys, "parallelism", "pipeline_parallel_degree", 1);
  ReadBatch(keys, dp, pp, job);
  if (dp_given) job.strategy.emplace_back("dp", std::to_string(dp));
  job.strategy.emplace_back("tp", std::to_string(tp));
  job.strategy.emplace_back("pp", std::to_string(pp));
  ReadPipeline(keys, pp, job);
  // torchtitan's tensor-parallel plan shards the norms' activations on the sequence axis.
  if (tp > 1) job.strategy.emplace_back("sp", "true");
  ReadPrecision(keys, tp, pp, job);
  ReadRecompute(keys, job);
  job.strategy.emplace_back("overlap", "on");  // DDP's bucketed all-reduce runs beside the backward
  for (const auto& [section, key] : keys.Unread()) {
    job.ignored.push_back(TomlKeys::Name(section, key) + " (" + IgnoredReason(section, key) + ")");
  }
  return job;
}

}  // namespace twinflow::models
