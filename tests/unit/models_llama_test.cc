// The Llama builder: its ops and shapes (RMSNorm, rotary q and k, grouped key-value heads, a
// SwiGLU MLP, no biases), every preset's parameter count against the published checkpoint's,
// errors naming the field, and reading Hugging Face config.json files.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "models/hf_config.h"
#include "models/model.h"
#include "tests/support/temp_file.h"
#include "tests/unit/model_test_helpers.h"

namespace twinflow::models {
namespace {

using namespace model_test_helpers;  // NOLINT: test helpers

Shape ShapeOf(const BuiltModel& model, const std::string& name) {
  const auto id = model.graph.FindTensor(name);
  return id ? model.graph.tensor(*id).meta.shape : Shape{-1};
}

TEST(LlamaModel, BuildsRmsNormRotaryGroupedAttentionAndSwiGlu) {
  const GptConfig c = GptConfig::Llama();  // hidden 64, 4 heads, 2 key-value heads, FFN 176
  const BuiltModel model = BuildGpt(Registry(), c, Options("dp=2,tp=2", 4));
  model.graph.Validate(Registry());
  EXPECT_EQ(CountOps(model, "rms_norm"), 2 * c.layers + 1);
  EXPECT_EQ(CountOps(model, "layer_norm"), 0);
  EXPECT_EQ(CountOps(model, "rotary"), 2 * c.layers * 2);  // q and k, forward and backward
  EXPECT_EQ(CountOps(model, "bias_add"), 0);
  EXPECT_EQ(CountOps(model, "silu"), c.layers);
  EXPECT_FALSE(model.graph.FindTensor("wpe").has_value()) << "rotary positions, no table";
  EXPECT_EQ(ShapeOf(model, "block0/k/weight"), (Shape{64, 32}));  // 2 heads of 16
  EXPECT_EQ(ShapeOf(model, "block0/gate/weight"), (Shape{64, 176}));
  EXPECT_EQ(ShapeOf(model, "block0/down/weight"), (Shape{176, 64}));
  EXPECT_EQ(ShapeOf(model, "lm_head"), (Shape{64, 128}));  // untied from wte
  EXPECT_EQ(PinOf(model, "block0/k/weight"), "(B,S(1))");
  EXPECT_EQ(PinOf(model, "block0/up/weight"), "(B,S(1))");
  EXPECT_EQ(PinOf(model, "block0/down/weight"), "(B,S(0))");
}

// Each preset's parameters, counted from the built graph, equal the published checkpoint's
// (the Hugging Face model cards' totals, embeddings and head included).
TEST(LlamaModel, PresetsHaveThePublishedParameterCounts) {
  const std::pair<const char*, int64_t> published[] = {
      {"llama2-7b", 6'738'415'616},   {"llama2-13b", 13'015'864'320},
      {"llama2-70b", 68'976'648'192}, {"llama3-8b", 8'030'261'248},
      {"llama3-70b", 70'553'706'496}, {"llama3-405b", 405'853'388'800}};
  for (const auto& [preset, count] : published) {
    const GptConfig c = DecoderConfig(DecoderFamily::kLlama, preset);
    const BuiltModel model = BuildGpt(Registry(), c, Options("auto", 1, false));
    EXPECT_EQ(ParameterElements(model), count) << preset;
  }
}

TEST(LlamaModel, PresetsAndSizesNameWhatIsWrong) {
  EXPECT_PRED2(Contains,
               InvalidArgumentText([] { DecoderConfig(DecoderFamily::kLlama, "llama9-1b"); }),
               "llama2-7b, llama2-13b");
  EXPECT_PRED2(Contains,
               InvalidArgumentText([] { DecoderConfig(DecoderFamily::kGpt, "llama2-7b"); }),
               "is a llama model");
  EXPECT_PRED2(Contains, InvalidArgumentText([] { ParseDecoderFamily("bert"); }), "'bert'");
  const auto error = [](GptConfig c, const std::string& strategy, int64_t devices) {
    return InvalidArgumentText([&] { BuildGpt(Registry(), c, Options(strategy, devices)); });
  };
  GptConfig c = GptConfig::Llama();
  c.kv_heads = 3;
  EXPECT_PRED2(Contains, error(c, "auto", 1), "kv_heads 3");
  c = GptConfig::Llama();
  c.hidden = 12;
  c.heads = 4;  // head size 3: rotary needs pairs
  c.kv_heads = 4;
  EXPECT_PRED2(Contains, error(c, "auto", 1), "even head size");
}

// A config.json written to a temporary file, removed with this.
class JsonFile : public twinflow::testing::TempTextFile {
 public:
  explicit JsonFile(const std::string& text) : TempTextFile(text, ".json") {}
};

// The keys of meta-llama/Llama-2-70b-hf's config.json that carry sizes and choices.
const char* kLlama2_70b = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
  "hidden_size": 8192, "intermediate_size": 28672, "max_position_embeddings": 4096,
  "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05, "rope_scaling": null, "tie_word_embeddings": false,
  "torch_dtype": "float16", "vocab_size": 32000})";

TEST(HfConfig, ReadsALlamaConfigAsItsPreset) {
  const JsonFile file(kLlama2_70b);
  const GptConfig got = ReadHfConfig(file.path(), DecoderFamily::kLlama);
  const GptConfig want = DecoderConfig(DecoderFamily::kLlama, "llama2-70b");
  EXPECT_EQ(got.layers, want.layers);
  EXPECT_EQ(got.hidden, want.hidden);
  EXPECT_EQ(got.heads, want.heads);
  EXPECT_EQ(got.kv_heads, want.kv_heads);
  EXPECT_EQ(got.ffn, want.ffn);
  EXPECT_EQ(got.sequence, want.sequence);
  EXPECT_EQ(got.vocab, want.vocab);
  EXPECT_EQ(got.norm, NormKind::kRmsNorm);
  EXPECT_DOUBLE_EQ(got.norm_epsilon, 1e-5);
}

// Llama 3.1 scales its rotary angles; the sizes, and so the cost, are Llama 3's.
TEST(HfConfig, AcceptsLlama31RopeScaling) {
  std::string text = kLlama2_70b;
  const std::string null_scaling = "\"rope_scaling\": null";
  text.replace(text.find(null_scaling), null_scaling.size(),
               R"("rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192, "rope_type": "llama3"})");
  const JsonFile file(text);
  const GptConfig got = ReadHfConfig(file.path(), DecoderFamily::kLlama);
  EXPECT_EQ(got.layers, 80);
  EXPECT_EQ(got.hidden, 8192);
  EXPECT_EQ(got.kv_heads, 8);
}

TEST(HfConfig, ReadsAGpt2Config) {
  const JsonFile file(R"({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12,
                          "n_positions": 1024, "n_inner": null, "vocab_size": 50257})");
  const GptConfig c = ReadHfConfig(file.path(), DecoderFamily::kGpt);
  EXPECT_EQ(c.hidden, 768);
  EXPECT_EQ(c.FfnSize(), 3072);
  EXPECT_EQ(c.sequence, 1024);
  EXPECT_EQ(c.norm, NormKind::kLayerNorm);
}

TEST(HfConfig, ErrorsNameTheFileAndTheKey) {
  const auto error = [](const std::string& text, DecoderFamily family) {
    const JsonFile file(text);
    const std::string message = InvalidArgumentText([&] { ReadHfConfig(file.path(), family); });
    EXPECT_PRED2(Contains, message, file.path());
    return message;
  };
  const std::string llama = kLlama2_70b;
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string text = llama;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  EXPECT_PRED2(Contains, error("{not json", DecoderFamily::kLlama), "not a JSON object");
  EXPECT_PRED2(Contains, error(llama, DecoderFamily::kGpt), "--model llama");
  EXPECT_PRED2(Contains, error(with("\"llama\"", "\"bert\""), DecoderFamily::kLlama), "bert");
  EXPECT_PRED2(Contains, error(with("\"hidden_size\": 8192,", ""), DecoderFamily::kLlama),
               "\"hidden_size\" is missing");
  EXPECT_PRED2(Contains, error(with("8192", "81.5"), DecoderFamily::kLlama), "positive integer");
  EXPECT_PRED2(Contains, error(with("false", "true"), DecoderFamily::kLlama),
               "tie_word_embeddings");
  EXPECT_PRED2(Contains, error(with("\"silu\"", "\"gelu\""), DecoderFamily::kLlama), "hidden_act");
  EXPECT_PRED2(Contains, InvalidArgumentText([] {
                 ReadHfConfig("/nonexistent/config.json", DecoderFamily::kLlama);
               }),
               "cannot read /nonexistent/config.json");
}

}  // namespace
}  // namespace twinflow::models
