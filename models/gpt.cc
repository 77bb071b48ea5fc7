// A GPT decoder: token and position embeddings, pre-norm blocks of causal self-attention and
// a GELU MLP with residual connections, a final layer norm and a language-model head.
// Under tensor parallelism the attention projections and the MLP pair up Megatron-style,
// the token table and the head split the vocabulary, and the loss is built for split classes.
#include <cmath>

#include "engine/core/error.h"
#include "engine/ops/attention.h"
#include "engine/ops/softmax_ops.h"
#include "models/model.h"
#include "models/pins.h"
#include "models/training.h"

namespace twinflow::models {
namespace {

class GptWriter {
 public:
  GptWriter(graph::GraphBuilder& builder, const GptConfig& config, const BuildOptions& options)
      : b_(builder), c_(config), o_(options), s_(options.strategy) {}

  graph::TensorId Weight(const std::string& name, Shape shape, WeightRole role,
                         const std::string& init = "normal") {
    const double std = init == "normal" ? 0.02 : 0.0;
    const graph::TensorId w = Parameter(b_, name, std::move(shape), init, std, NextSeed());
    PinWeight(b_, s_, w, role);
    parameters_.push_back(w);
    return w;
  }

  // x [tokens, in] @ w [in, out] + bias, named `name`.
  graph::TensorId Dense(graph::TensorId x, int64_t in, int64_t out, const std::string& name,
                        bool column) {
    const graph::TensorId w =
        Weight(name + "/weight", Shape{in, out}, column ? WeightRole::kColumn : WeightRole::kRow);
    const graph::TensorId bias =
        Weight(name + "/bias", Shape{out},
               column ? WeightRole::kColumnBias : WeightRole::kReplicated, "zeros");
    const graph::TensorId y =
        b_.Add1("bias_add", {b_.Add1("matmul", {x, w}, {}, name + "/matmul"), bias}, {},
                name + "/bias_add");
    // A row-parallel linear ends whole on the tp group: its partial sum is all-reduced (not
    // reduce-scattered into a sequence split, which is sequence parallelism's layout).
    if (!column) PinActivation(b_, s_, y);
    return y;
  }

  graph::TensorId LayerNorm(graph::TensorId x, const std::string& name) {
    const graph::TensorId gamma =
        Weight(name + "/gamma", Shape{c_.hidden}, WeightRole::kReplicated, "ones");
    const graph::TensorId beta =
        Weight(name + "/beta", Shape{c_.hidden}, WeightRole::kReplicated, "zeros");
    return b_.Add1("layer_norm", {x, gamma, beta}, Attrs{{"epsilon", 1e-5}}, name);
  }

  graph::TensorId Reshape(graph::TensorId x, std::vector<int64_t> shape, const std::string& name) {
    return b_.Add1("reshape", {x}, Attrs{{"shape", shape}}, name);
  }

  // One pre-norm block on h [batch, seq, hidden].
  graph::TensorId Block(graph::TensorId h, int64_t layer) {
    const std::string p = "block" + std::to_string(layer);
    const int64_t tokens = c_.batch * c_.sequence, hidden = c_.hidden;
    const std::vector<int64_t> flat = {tokens, hidden}, full = {c_.batch, c_.sequence, hidden};
    const graph::TensorId a = Reshape(LayerNorm(h, p + "/ln1"), flat, p + "/ln1_flat");
    graph::TensorId qkv[3];
    const char* names[3] = {"/q", "/k", "/v"};
    for (int i = 0; i < 3; ++i) {
      qkv[i] = Reshape(Dense(a, hidden, hidden, p + names[i], true), full, p + names[i] + "_heads");
    }
    const graph::TensorId att = ops::CausalSelfAttention(b_, qkv[0], qkv[1], qkv[2], c_.heads,
                                                         p + "/attention", c_.attention);
    const graph::TensorId proj =
        Dense(Reshape(att, flat, p + "/attention_flat"), hidden, hidden, p + "/proj", false);
    h = b_.Add1("add", {h, Reshape(proj, full, p + "/proj_out")}, {}, p + "/residual1");
    PinActivation(b_, s_, h);
    const graph::TensorId m = Reshape(LayerNorm(h, p + "/ln2"), flat, p + "/ln2_flat");
    const graph::TensorId up =
        b_.Add1("gelu", {Dense(m, hidden, 4 * hidden, p + "/fc1", true)}, {}, p + "/gelu");
    const graph::TensorId down = Dense(up, 4 * hidden, hidden, p + "/fc2", false);
    h = b_.Add1("add", {h, Reshape(down, full, p + "/fc2_out")}, {}, p + "/residual2");
    PinActivation(b_, s_, h);
    return h;
  }

  void Stage(int64_t stage) {
    b_.SetStage(static_cast<int32_t>(stage), s_.StagePlacement(stage, o_.devices, o_.device));
  }
  std::vector<graph::TensorId>& parameters() { return parameters_; }

 private:
  uint64_t NextSeed() { return o_.seed * 100000 + (seed_counter_++); }

  graph::GraphBuilder& b_;
  const GptConfig& c_;
  const BuildOptions& o_;
  const Strategy& s_;
  std::vector<graph::TensorId> parameters_;
  uint64_t seed_counter_ = 0;
};

void CheckConfig(const GptConfig& c, const Strategy& s) {
  for (const auto& [value, field] : {std::pair{c.layers, "layers"},
                                     {c.hidden, "hidden"},
                                     {c.heads, "heads"},
                                     {c.sequence, "sequence"},
                                     {c.vocab, "vocab"},
                                     {c.batch, "batch"}}) {
    if (value < 1) throw InvalidArgumentError(std::string("gpt ") + field + " must be positive");
  }
  if (c.hidden % c.heads != 0) {
    throw InvalidArgumentError("gpt hidden " + std::to_string(c.hidden) +
                               " is not divisible by heads " + std::to_string(c.heads));
  }
  if (!s.automatic && s.pp > c.layers) {
    throw InvalidArgumentError("pp=" + std::to_string(s.pp) + " exceeds the gpt's " +
                               std::to_string(c.layers) + " layers");
  }
}

}  // namespace

BuiltModel BuildGpt(const graph::OpRegistry& registry, const GptConfig& full_config,
                    const BuildOptions& given) {
  BuildOptions options = given;  // the strategy with its inferred degree
  options.strategy.Resolve(options.devices);
  const Strategy& strategy = options.strategy;
  CheckConfig(full_config, strategy);
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
  const graph::TensorId wpe =
      writer.Weight("wpe", Shape{config.sequence, config.hidden}, WeightRole::kReplicated);
  graph::TensorId h = builder.Add1(
      "add", {builder.Add1("embedding", {wte, ids}, {}, "token_embedding"), wpe}, {}, "embed");
  PinActivation(builder, strategy, h);
  std::vector<std::vector<graph::OpId>> blocks;
  for (int64_t layer = 0; layer < config.layers; ++layer) {
    writer.Stage(StageOf(layer, config.layers, strategy.pp));
    const auto first = static_cast<graph::OpId>(builder.graph().ops().size());
    h = writer.Block(h, layer);
    blocks.push_back(LayerOps(builder, first));
  }
  const int64_t flat_tokens = config.batch * config.sequence;
  const graph::TensorId normed =
      writer.Reshape(writer.LayerNorm(h, "ln_f"), {flat_tokens, config.hidden}, "ln_f_flat");
  const graph::TensorId head =
      writer.Weight("lm_head", Shape{config.hidden, config.vocab}, WeightRole::kColumn);
  const graph::TensorId logits = builder.Add1("matmul", {normed, head}, {}, "logits");
  const graph::TensorId flat_labels = writer.Reshape(labels, {flat_tokens}, "labels_flat");
  const bool classes_split = !strategy.automatic && strategy.tp > 1;
  if (classes_split) PinClassSplitLogits(builder, strategy, logits);
  const graph::TensorId losses =
      ops::SparseSoftmaxCrossEntropy(builder, logits, flat_labels, classes_split);
  BuiltModel model = FinishModel(builder, losses, writer.parameters(), {"ids", "labels"}, options,
                                 blocks, DefaultOptimizer("gpt"));
  model.index_bounds = {{"ids", config.vocab}, {"labels", config.vocab}};
  return model;
}

}  // namespace twinflow::models
