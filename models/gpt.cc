// A decoder-only transformer, GPT or Llama: token embeddings (plus learned positions, GPT),
// pre-norm blocks of causal self-attention (rotary positions and grouped-query attention,
// Llama) and an MLP (GELU, GPT; SwiGLU, Llama) with residual connections, a final norm (layer
// norm or RMSNorm) and an untied language-model head. Under tensor parallelism the attention
// projections and the MLP pair up Megatron-style, the token table and the head split the
// vocabulary, and the loss is built for split classes.
#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/ops/attention.h"
#include "engine/ops/softmax_ops.h"
#include "models/model.h"
#include "models/model_flops.h"
#include "models/pins.h"
#include "models/training.h"

namespace twinflow::models {
namespace {

class GptWriter {
 public:
  GptWriter(graph::GraphBuilder& builder, const GptConfig& config, const BuildOptions& options)
      : b_(builder), c_(config), o_(options), s_(options.strategy), layer_ops_(builder) {}

  graph::TensorId Weight(const std::string& name, Shape shape, WeightRole role,
                         const std::string& init = "normal") {
    const double std = init == "normal" ? 0.02 : 0.0;
    const graph::TensorId w = Parameter(b_, name, std::move(shape), init, std, NextSeed());
    PinWeight(b_, s_, w, role);
    parameters_.push_back(w);
    return w;
  }

  // x [tokens, in] @ w [in, out] (+ bias when the config has them), named `name`.
  graph::TensorId Dense(graph::TensorId x, int64_t in, int64_t out, const std::string& name,
                        bool column) {
    const graph::TensorId w =
        Weight(name + "/weight", Shape{in, out}, column ? WeightRole::kColumn : WeightRole::kRow);
    graph::TensorId y = b_.Add1("matmul", {x, w}, {}, name + "/matmul");
    if (c_.bias) {
      const graph::TensorId bias =
          Weight(name + "/bias", Shape{out},
                 column ? WeightRole::kColumnBias : WeightRole::kReplicated, "zeros");
      y = b_.Add1("bias_add", {y, bias}, {}, name + "/bias_add");
    }
    // A row-parallel linear ends whole on the tp group: its partial sum is all-reduced, and
    // the bias added once. Under sequence parallelism it ends split on the sequence instead:
    // the residual add's pin has the search reduce-scatter the sum (bias added to the shard).
    // Without a bias the matmul's own output is partial, and the add's pin reads it.
    if (!column && c_.bias && !s_.sequence_parallel) PinActivation(b_, s_, y);
    return y;
  }

  graph::TensorId Norm(graph::TensorId x, const std::string& name) {
    const Attrs epsilon{{"epsilon", c_.norm_epsilon}};
    const graph::TensorId gamma =
        Weight(name + "/gamma", Shape{c_.hidden}, WeightRole::kReplicated, "ones");
    if (c_.norm == NormKind::kRmsNorm) return b_.Add1("rms_norm", {x, gamma}, epsilon, name);
    const graph::TensorId beta =
        Weight(name + "/beta", Shape{c_.hidden}, WeightRole::kReplicated, "zeros");
    return b_.Add1("layer_norm", {x, gamma, beta}, epsilon, name);
  }

  graph::TensorId Reshape(graph::TensorId x, std::vector<int64_t> shape, const std::string& name) {
    return b_.Add1("reshape", {x}, Attrs{{"shape", shape}}, name);
  }

  // One pre-norm block on h [batch, seq, hidden].
  graph::TensorId Block(graph::TensorId h, int64_t layer) {
    const std::string p = "block" + std::to_string(layer);
    const std::vector<int64_t> flat = {c_.batch * c_.sequence, c_.hidden};
    const std::vector<int64_t> full = {c_.batch, c_.sequence, c_.hidden};
    const graph::TensorId att = Attention(Reshape(Norm(h, p + "/ln1"), flat, p + "/ln1_flat"), p);
    const graph::TensorId proj =
        Dense(Reshape(att, flat, p + "/attention_flat"), c_.hidden, c_.hidden, p + "/proj", false);
    h = b_.Add1("add", {h, Reshape(proj, full, p + "/proj_out")}, {}, p + "/residual1");
    PinActivation(b_, s_, h);
    const graph::TensorId down = Mlp(Reshape(Norm(h, p + "/ln2"), flat, p + "/ln2_flat"), p);
    h = b_.Add1("add", {h, Reshape(down, full, p + "/fc2_out")}, {}, p + "/residual2");
    PinActivation(b_, s_, h);
    return h;
  }

  // Causal self-attention on a [tokens, hidden]: q from hidden, k and v from the key-value
  // heads' width; rotary positions turn q and k.
  graph::TensorId Attention(graph::TensorId a, const std::string& p) {
    const int64_t head_dim = c_.hidden / c_.heads;
    const int64_t widths[3] = {c_.hidden, c_.KvHeads() * head_dim, c_.KvHeads() * head_dim};
    const char* names[3] = {"/q", "/k", "/v"};
    graph::TensorId qkv[3];
    for (int i = 0; i < 3; ++i) {
      qkv[i] = Reshape(Dense(a, c_.hidden, widths[i], p + names[i], true),
                       {c_.batch, c_.sequence, widths[i]}, p + names[i] + "_heads");
      if (i < 2 && c_.positions == PositionKind::kRotary) {
        qkv[i] =
            b_.Add1("rotary", {qkv[i]}, Attrs{{"head_dim", head_dim}, {"theta", c_.rope_theta}},
                    p + names[i] + "_rotary");
      }
    }
    const auto first = static_cast<graph::OpId>(b_.graph().ops().size());
    const graph::TensorId out = ops::CausalSelfAttention(
        b_, qkv[0], qkv[1], qkv[2], c_.heads, p + "/attention", c_.attention, c_.KvHeads());
    // Selective recomputation's segment: the attention core, when it holds [seq, seq] scores.
    if (c_.attention == ops::AttentionKind::kUnfused)
      attention_cores_.push_back(layer_ops_.Ops(first));
    return out;
  }

  // The MLP on a [tokens, hidden]: GELU(m W1) W2, or SwiGLU's (SiLU(m Wg) * (m Wu)) Wd, the
  // first weights column-parallel and the last row-parallel.
  graph::TensorId Mlp(graph::TensorId m, const std::string& p) {
    const int64_t ffn = c_.FfnSize();
    if (c_.mlp == MlpKind::kGelu) {
      const graph::TensorId up =
          b_.Add1("gelu", {Dense(m, c_.hidden, ffn, p + "/fc1", true)}, {}, p + "/gelu");
      return Dense(up, ffn, c_.hidden, p + "/fc2", false);
    }
    const graph::TensorId gate =
        b_.Add1("silu", {Dense(m, c_.hidden, ffn, p + "/gate", true)}, {}, p + "/silu");
    const graph::TensorId up = Dense(m, c_.hidden, ffn, p + "/up", true);
    const graph::TensorId both = b_.Add1("mul", {gate, up}, {}, p + "/swiglu");
    return Dense(both, ffn, c_.hidden, p + "/down", false);
  }

  void Stage(int64_t stage) {
    b_.SetStage(static_cast<int32_t>(stage), s_.StagePlacement(stage, o_.devices, o_.device));
  }
  std::vector<graph::TensorId>& parameters() { return parameters_; }
  const std::vector<std::vector<graph::OpId>>& attention_cores() const { return attention_cores_; }
  // One block's ops from `first` on, for full recomputation.
  std::vector<graph::OpId> LayerOps(graph::OpId first) { return layer_ops_.Ops(first); }

 private:
  uint64_t NextSeed() { return o_.seed * 100000 + (seed_counter_++); }

  graph::GraphBuilder& b_;
  const GptConfig& c_;
  const BuildOptions& o_;
  const parallel::Strategy& s_;
  std::vector<graph::TensorId> parameters_;
  std::vector<std::vector<graph::OpId>> attention_cores_;  // each block's, in order
  LayerOpsFinder layer_ops_;
  uint64_t seed_counter_ = 0;
};

void CheckConfig(const GptConfig& c, const parallel::Strategy& s) {
  for (const auto& [value, field] : {std::pair{c.layers, "layers"},
                                     {c.hidden, "hidden"},
                                     {c.heads, "heads"},
                                     {c.sequence, "sequence"},
                                     {c.vocab, "vocab"},
                                     {c.batch, "batch"},
                                     {c.KvHeads(), "kv_heads"},
                                     {c.FfnSize(), "ffn"}}) {
    if (value < 1) throw InvalidArgumentError(std::string("gpt ") + field + " must be positive");
  }
  if (c.hidden % c.heads != 0) {
    throw InvalidArgumentError("gpt hidden " + std::to_string(c.hidden) +
                               " is not divisible by heads " + std::to_string(c.heads));
  }
  if (c.heads % c.KvHeads() != 0) {
    throw InvalidArgumentError("gpt heads " + std::to_string(c.heads) +
                               " is not divisible by kv_heads " + std::to_string(c.KvHeads()));
  }
  if (c.positions == PositionKind::kRotary && (c.hidden / c.heads) % 2 != 0) {
    throw InvalidArgumentError("rotary positions need an even head size, got hidden / heads = " +
                               std::to_string(c.hidden / c.heads));
  }
  if (!(c.rope_theta > 0) || !(c.norm_epsilon >= 0)) {
    throw InvalidArgumentError("rope_theta must be positive and norm_epsilon non-negative");
  }
  if (!s.automatic && s.stages() > c.layers) {
    throw InvalidArgumentError(s.StagesText() + " exceeds the model's " + std::to_string(c.layers) +
                               " layers");
  }
}

// Refuses a config whose graph would pass kMaxGraphOps. Its size is linear in the layers:
// extrapolated from builds of k and 2k layers (k the pipeline's stages, the fewest it allows).
void CheckGraphSize(const graph::OpRegistry& registry, const GptConfig& config,
                    const BuildOptions& options, int64_t stages) {
  const int64_t k = std::max<int64_t>(1, stages);
  if (config.layers <= 2 * k) return;
  const auto ops = [&](int64_t layers) {
    GptConfig small = config;
    small.layers = layers;
    return static_cast<double>(BuildGpt(registry, small, options).graph.ops().size());
  };
  const double base = ops(k);
  const double estimate =
      base + (ops(2 * k) - base) * static_cast<double>(config.layers - k) / static_cast<double>(k);
  if (estimate > static_cast<double>(kMaxGraphOps)) {
    throw InvalidArgumentError(
        "a decoder of " + std::to_string(config.layers) + " layers would build about " +
        std::to_string(static_cast<int64_t>(estimate)) + " ops, more than the cap of " +
        std::to_string(kMaxGraphOps) + " (about " +
        std::to_string(static_cast<int64_t>((ops(2 * k) - base) / static_cast<double>(k))) +
        " a layer): fewer layers, or --inference for the forward graph alone");
  }
}

}  // namespace

BuiltModel BuildGpt(const graph::OpRegistry& registry, const GptConfig& full_config,
                    const BuildOptions& given) {
  BuildOptions options = given;  // the strategy with its inferred degree
  options.strategy.Resolve(options.devices);
  const parallel::Strategy& strategy = options.strategy;
  CheckConfig(full_config, strategy);
  CheckGraphSize(registry, full_config, given, strategy.automatic ? 1 : strategy.stages());
  GptConfig config = full_config;  // the graph is written for one micro-batch
  config.batch = MicroBatch(full_config.batch, strategy);
  graph::GraphBuilder builder(registry,
                              strategy.StagePlacement(0, options.devices, options.device));
  builder.SetAutocast(strategy.Autocast());
  GptWriter writer(builder, config, options);
  const Shape tokens{config.batch, config.sequence};
  const graph::TensorId ids = builder.Input("ids", tokens, DType::kI32);
  const graph::TensorId labels = builder.Input("labels", tokens, DType::kI32);
  PinData(builder, strategy, ids);
  PinData(builder, strategy, labels);

  const graph::TensorId wte =
      writer.Weight("wte", Shape{config.vocab, config.hidden}, WeightRole::kVocabulary);
  graph::TensorId h = builder.Add1("embedding", {wte, ids}, {}, "token_embedding");
  if (config.positions == PositionKind::kLearned) {
    const graph::TensorId wpe =
        writer.Weight("wpe", Shape{config.sequence, config.hidden}, WeightRole::kReplicated);
    h = builder.Add1("add", {h, wpe}, {}, "embed");
    // Under sp the replicated position table cannot meet a sequence split here: the search
    // decides where the sum enters it (the first block's pins read it split).
    if (!strategy.sequence_parallel) PinActivation(builder, strategy, h);
  }
  // Without positions to add, the table's vocabulary-split partial sum is left to the search,
  // which all-reduces it for the first block as Megatron does (a pin would bind the lookup).
  std::vector<std::vector<graph::OpId>> blocks;
  for (int64_t layer = 0; layer < config.layers; ++layer) {
    writer.Stage(StageOf(layer, config.layers, strategy.stages()));
    const auto first = static_cast<graph::OpId>(builder.graph().ops().size());
    h = writer.Block(h, layer);
    blocks.push_back(writer.LayerOps(first));
  }
  const int64_t flat_tokens = config.batch * config.sequence;
  const graph::TensorId normed =
      writer.Reshape(writer.Norm(h, "ln_f"), {flat_tokens, config.hidden}, "ln_f_flat");
  const graph::TensorId head =
      writer.Weight("lm_head", Shape{config.hidden, config.vocab}, WeightRole::kColumn);
  const graph::TensorId logits = builder.Add1("matmul", {normed, head}, {}, "logits");
  const graph::TensorId flat_labels = writer.Reshape(labels, {flat_tokens}, "labels_flat");
  const bool classes_split = !strategy.automatic && strategy.tp > 1;
  if (classes_split) PinClassSplitLogits(builder, strategy, logits);
  const graph::TensorId losses =
      ops::SparseSoftmaxCrossEntropy(builder, logits, flat_labels, classes_split);
  BuiltModel model = FinishModel(
      builder, losses, writer.parameters(), {"ids", "labels"}, options,
      strategy.recompute == parallel::Recompute::kSelective ? writer.attention_cores() : blocks,
      DefaultOptimizer("gpt"));  // llama's too: AdamW
  model.index_bounds = {{"ids", config.vocab}, {"labels", config.vocab}};
  model.tokens_per_step = full_config.batch * full_config.sequence;
  if (options.training) model.model_flops_per_step = DecoderModelFlops(full_config);
  return model;
}

}  // namespace twinflow::models
