#pragma once
// Model builders shared by the CLI, Python and the benchmarks. A builder writes the forward
// graph of a model for one logical device, places its layers on pipeline stages and pins the
// layouts a strategy prescribes (Megatron-style tensor parallelism: the first weight of a pair
// split by columns, the second by rows, so each pair needs one all-reduce); with `training` it
// appends autograd and the optimizer. Layouts not pinned are left to the SBP search.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/graph/graph_builder.h"
#include "engine/graph/optimizer.h"
#include "engine/ops/attention.h"
#include "engine/parallel/strategy.h"

namespace twinflow::models {

struct BuiltModel {
  graph::LogicalGraph graph;
  graph::TensorId loss = -1;
  std::vector<graph::TensorId> parameters;          // the model's variables (not optimizer state)
  std::vector<std::string> feeds;                   // input op names, e.g. "x", "labels"
  std::map<std::string, int64_t> index_bounds;      // integer feeds: values lie in [0, bound)
  parallel::Strategy strategy;                      // resolved: every degree known
  int64_t devices = 1;                              // the devices its placements span
  std::optional<graph::OptimizerConfig> optimizer;  // what trains it; none for inference
  // What published tables count a step by (models/model_flops.h): the tokens of a step's batch
  // (0 for a model without a sequence) and the model's FLOPs of a training step (0 unknown).
  int64_t tokens_per_step = 0;
  double model_flops_per_step = 0;
};

// The optimizer a training model gets when none is given: AdamW for "gpt" (what LLMs are
// trained with), SGD for "mlp" and any other.
graph::OptimizerConfig DefaultOptimizer(const std::string& model);

// What the commands print as the optimizer used: its full text (OptimizerText), or "none
// (inference)".
std::string OptimizerLabel(const BuiltModel& model);

// A deterministic synthetic batch for `step` (all micro-batches of the step, stacked on axis 0):
// uniform [-1, 1) floats, integers below their bound. For benchmarks, smoke runs and the CLI's
// `run` without data.
std::map<std::string, Tensor> SyntheticBatch(const BuiltModel& model, int64_t step, uint64_t seed);

struct BuildOptions {
  parallel::Strategy strategy;
  int64_t devices = 1;
  bool training = true;
  // Unset: the model's default, what it is usually trained with (the GPT: AdamW, as LLMs are;
  // the MLP and graphs written in Python: SGD).
  std::optional<graph::OptimizerConfig> optimizer;
  uint64_t seed = 1;
  DeviceType device = DeviceType::kCpu;  // of every placement the builder writes
};

struct MlpConfig {
  std::vector<int64_t> widths = {784, 4096, 4096, 10};  // input, hidden..., classes
  int64_t batch = 512;
};

// The choices that tell a Llama decoder from a GPT one (Megatron-LM's --normalization RMSNorm,
// --swiglu, --position-embedding-type rope, --disable-bias-linear).
enum class NormKind { kLayerNorm, kRmsNorm };
enum class MlpKind { kGelu, kSwiGlu };  // GELU(x W1) W2, or (SiLU(x Wg) * (x Wu)) Wd
enum class PositionKind { kLearned, kRotary };

// A decoder-only transformer: the GPT (the defaults) or, with the Llama choices, a Llama. The
// token table and the head are separate weights (untied) in both.
struct GptConfig {
  int64_t layers = 2;
  int64_t hidden = 64;
  int64_t heads = 4;
  int64_t sequence = 32;
  int64_t vocab = 128;
  int64_t batch = 8;
  ops::AttentionKind attention = ops::AttentionKind::kUnfused;
  int64_t kv_heads = 0;  // key-value heads; 0: one per query head; fewer: grouped-query attention
  int64_t ffn = 0;       // the MLP's inner width; 0: 4 * hidden
  NormKind norm = NormKind::kLayerNorm;
  MlpKind mlp = MlpKind::kGelu;
  PositionKind positions = PositionKind::kLearned;
  bool bias = true;         // biases on the linear layers (GPT) or none (Llama)
  double rope_theta = 1e4;  // rotary base
  double norm_epsilon = 1e-5;

  int64_t KvHeads() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t FfnSize() const { return ffn > 0 ? ffn : 4 * hidden; }
  static GptConfig Gpt3_175B();  // 96 layers, 12288 hidden, 96 heads, 2048 tokens, 50257 vocab
  // A small Llama (the GptConfig sizes but 4 layers, 2 key-value heads, FFN 176) with RMSNorm,
  // SwiGLU, rotary positions and no biases.
  static GptConfig Llama();
};

// The decoder models by name: "gpt" and "llama".
enum class DecoderFamily { kGpt, kLlama };
const char* DecoderFamilyName(DecoderFamily family);
// InvalidArgumentError "unknown model 'x' (expected mlp, gpt or llama)" unless gpt or llama.
DecoderFamily ParseDecoderFamily(const std::string& model);
// The config of a family: its small default, or the published sizes of `preset` (presets.cc:
// gpt3-175b; llama2-7b, -13b, -70b; llama3-8b, -70b, -405b). InvalidArgumentError names an
// unknown preset, or one of the other family, with the presets it has.
GptConfig DecoderConfig(DecoderFamily family, const std::string& preset = "");

// Both throw InvalidArgumentError naming the field for bad sizes (non-positive, hidden not
// divisible by heads, fewer layers than pipeline stages, a device count the strategy does not
// fit).
BuiltModel BuildMlp(const graph::OpRegistry& registry, const MlpConfig& config,
                    const BuildOptions& options);
// Builds a GPT or a Llama, as the config's choices say. A graph of more than kMaxGraphOps
// ops (its size extrapolated from two small builds) is refused before it is built: millions of
// ops take minutes and gigabytes to build, search and lower (about 2.3 KB an op in explain).
// The default GPT block is 242 ops with training, so the cap is about 8,000 blocks: 80 times
// GPT-3's 96.
inline constexpr int64_t kMaxGraphOps = 2'000'000;
BuiltModel BuildGpt(const graph::OpRegistry& registry, const GptConfig& config,
                    const BuildOptions& options);

// The stage of layer `layer` of `layers` over `stages` pipeline stages (balanced, in order).
int64_t StageOf(int64_t layer, int64_t layers, int64_t stages);

}  // namespace twinflow::models
