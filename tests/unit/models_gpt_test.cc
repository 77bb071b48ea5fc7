// The GPT builder: a valid graph, parameter counts and shapes, the pins a Megatron strategy
// prescribes, pipeline stage placements, errors naming the field, and the GPT-3 175B preset.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "models/model.h"
#include "tests/unit/model_test_helpers.h"

namespace twinflow::models {
namespace {

using namespace model_test_helpers;  // NOLINT: test helpers

// 2VH + SH + L(12H^2 + 13H) + 2H: embeddings, per block two layer norms, q/k/v/proj
// (H x H + H each) and the 4H MLP, the final layer norm and a bias-free head.
int64_t GptParameters(const GptConfig& c) {
  const int64_t h = c.hidden;
  return 2 * c.vocab * h + c.sequence * h + c.layers * (12 * h * h + 13 * h) + 2 * h;
}

TEST(GptModel, BuildsAValidTrainingGraph) {
  const BuiltModel model = BuildGpt(Registry(), SmallGpt(), Options("auto", 1));
  model.graph.Validate(Registry());
  EXPECT_EQ(model.feeds, (std::vector<std::string>{"ids", "labels"}));
  EXPECT_EQ(model.graph.tensor(model.loss).meta.shape.rank(), 0);
  const auto ids = model.graph.FindTensor("ids");
  ASSERT_TRUE(ids.has_value());
  EXPECT_EQ(model.graph.tensor(*ids).meta.shape, (Shape{4, 8}));
  EXPECT_EQ(model.graph.tensor(*ids).meta.dtype, DType::kI32);
  EXPECT_GE(CountOps(model, "assign"), static_cast<int>(model.parameters.size()));
}

// Full recomputation recomputes activations, not a weight's low-precision copy: recomputing
// the cast would keep the fp32 weight alive into the backward pass.
TEST(GptModel, FullRecomputationLeavesTheWeightCopiesOut) {
  const BuiltModel model =
      BuildGpt(Registry(), SmallGpt(), Options("dp=1,precision=bf16,recompute=full", 1));
  int recomputed = 0;
  for (const graph::OpNode& op : model.graph.ops()) {
    if (!op.name.ends_with("/recompute")) continue;
    ++recomputed;
    EXPECT_EQ(op.name.find("/weight/bf16"), std::string::npos) << op.name;
    EXPECT_EQ(op.name.find("/gamma/bf16"), std::string::npos) << op.name;
  }
  EXPECT_GT(recomputed, 0);
}

TEST(GptModel, ParameterCountMatchesTheFormula) {
  for (int64_t layers : {1, 2, 3}) {
    GptConfig config = SmallGpt();
    config.layers = layers;
    const BuiltModel model = BuildGpt(Registry(), config, Options("auto", 1, false));
    EXPECT_EQ(ParameterElements(model), GptParameters(config)) << layers << " layers";
    EXPECT_EQ(model.parameters.size(), static_cast<size_t>(16 * layers + 5));
  }
  GptConfig config = SmallGpt();
  config.hidden = 24;
  config.heads = 3;
  config.vocab = 37;
  config.sequence = 5;
  const BuiltModel model = BuildGpt(Registry(), config, Options("auto", 1, false));
  EXPECT_EQ(ParameterElements(model), GptParameters(config));
}

TEST(GptModel, ParameterShapes) {
  const GptConfig c = SmallGpt();
  const BuiltModel model = BuildGpt(Registry(), c, Options("auto", 1, false));
  const auto shape = [&](const std::string& name) {
    const auto id = model.graph.FindTensor(name);
    return id ? model.graph.tensor(*id).meta.shape : Shape{-1};
  };
  EXPECT_EQ(shape("wte"), (Shape{c.vocab, c.hidden}));
  EXPECT_EQ(shape("wpe"), (Shape{c.sequence, c.hidden}));
  EXPECT_EQ(shape("block0/q/weight"), (Shape{c.hidden, c.hidden}));
  EXPECT_EQ(shape("block1/fc1/weight"), (Shape{c.hidden, 4 * c.hidden}));
  EXPECT_EQ(shape("block1/fc1/bias"), (Shape{4 * c.hidden}));
  EXPECT_EQ(shape("block1/fc2/weight"), (Shape{4 * c.hidden, c.hidden}));
  EXPECT_EQ(shape("block0/ln2/gamma"), (Shape{c.hidden}));
  EXPECT_EQ(shape("lm_head"), (Shape{c.hidden, c.vocab}));
  EXPECT_EQ(shape("logits"), (Shape{c.batch * c.sequence, c.vocab}));
}

TEST(GptModel, ParameterNamesAreUniqueVariables) {
  const BuiltModel model = BuildGpt(Registry(), SmallGpt(), Options("auto", 1));
  std::set<std::string> names;
  for (graph::TensorId p : model.parameters) {
    EXPECT_TRUE(names.insert(model.graph.tensor(p).name).second) << model.graph.tensor(p).name;
    EXPECT_EQ(model.graph.op(model.graph.tensor(p).producer).type, "variable");
  }
}

TEST(GptModel, SameSeedSameGraphOtherSeedOtherInit) {
  BuildOptions options = Options("auto", 1);
  const BuiltModel a = BuildGpt(Registry(), SmallGpt(), options);
  const BuiltModel b = BuildGpt(Registry(), SmallGpt(), options);
  ASSERT_EQ(a.graph.ops().size(), b.graph.ops().size());
  for (size_t i = 0; i < a.graph.ops().size(); ++i) {
    EXPECT_EQ(a.graph.ops()[i].name, b.graph.ops()[i].name);
    EXPECT_EQ(a.graph.ops()[i].attrs, b.graph.ops()[i].attrs) << a.graph.ops()[i].name;
  }
  options.seed = 2;
  const BuiltModel c = BuildGpt(Registry(), SmallGpt(), options);
  EXPECT_NE(OpNamed(a, "wte").attrs, OpNamed(c, "wte").attrs);
}

TEST(GptModel, MegatronPinsUnderDp2Tp2) {
  const BuiltModel model = BuildGpt(Registry(), SmallGpt(), Options("dp=2,tp=2", 4));
  model.graph.Validate(Registry());
  EXPECT_EQ(PinOf(model, "ids"), "(S(0),B)");
  EXPECT_EQ(PinOf(model, "labels"), "(S(0),B)");
  EXPECT_EQ(PinOf(model, "wte"), "(B,S(0))");  // vocabulary
  EXPECT_EQ(PinOf(model, "wpe"), "(B,B)");
  EXPECT_EQ(PinOf(model, "lm_head"), "(B,S(1))");
  for (const std::string block : {"block0", "block1"}) {
    for (const std::string column : {"/q", "/k", "/v", "/fc1"}) {
      EXPECT_EQ(PinOf(model, block + column + "/weight"), "(B,S(1))") << block + column;
      EXPECT_EQ(PinOf(model, block + column + "/bias"), "(B,S(0))") << block + column;
    }
    for (const std::string row : {"/proj", "/fc2"}) {
      EXPECT_EQ(PinOf(model, block + row + "/weight"), "(B,S(0))") << block + row;
      EXPECT_EQ(PinOf(model, block + row + "/bias"), "(B,B)") << block + row;
    }
    EXPECT_EQ(PinOf(model, block + "/ln1/gamma"), "(B,B)");
    EXPECT_EQ(PinOf(model, block + "/ln2/beta"), "(B,B)");
  }
}

TEST(GptModel, NothingPinnedUnderAuto) {
  BuildOptions options = Options("auto", 8);
  options.strategy.hierarchy = Shape{2, 4};
  const BuiltModel model = BuildGpt(Registry(), SmallGpt(), options);
  model.graph.Validate(Registry());
  for (const graph::TensorNode& t : model.graph.tensors()) {
    EXPECT_FALSE(t.pin.has_value()) << t.name << " is pinned to " << t.pin->ToString();
  }
  EXPECT_EQ(OpNamed(model, "block0/q/matmul").placement.ToString(), "cpu:0-7 [2,4]");
}

TEST(GptModel, PipelineStagesPlaceBlocks) {
  const BuiltModel model = BuildGpt(Registry(), SmallGpt(), Options("tp=2,pp=2", 4));
  model.graph.Validate(Registry());
  const std::string first = "cpu:0-1 [1,2]", second = "cpu:2-3 [1,2]";
  EXPECT_EQ(OpNamed(model, "ids").placement.ToString(), first);
  EXPECT_EQ(OpNamed(model, "wte").placement.ToString(), first);
  EXPECT_EQ(OpNamed(model, "token_embedding").placement.ToString(), first);
  EXPECT_EQ(OpNamed(model, "block0/q/matmul").placement.ToString(), first);
  EXPECT_EQ(OpNamed(model, "block0/fc2/weight").placement.ToString(), first);
  EXPECT_EQ(OpNamed(model, "block0/residual2").placement.ToString(), first);
  EXPECT_EQ(OpNamed(model, "block1/ln1").placement.ToString(), second);
  EXPECT_EQ(OpNamed(model, "block1/q/weight").placement.ToString(), second);
  EXPECT_EQ(OpNamed(model, "block1/residual2").placement.ToString(), second);
  EXPECT_EQ(OpNamed(model, "logits").placement.ToString(), second);
  EXPECT_EQ(OpNamed(model, "lm_head").placement.ToString(), second);
}

TEST(GptModel, PipelineStagesWithMoreLayers) {
  GptConfig config = SmallGpt();
  config.layers = 4;
  const BuiltModel model = BuildGpt(Registry(), config, Options("pp=2", 2, false));
  model.graph.Validate(Registry());
  EXPECT_EQ(OpNamed(model, "block1/fc1/matmul").placement.ToString(), "cpu:0 [1,1]");
  EXPECT_EQ(OpNamed(model, "block2/fc1/matmul").placement.ToString(), "cpu:1 [1,1]");
}

TEST(GptModel, ErrorsNameTheField) {
  const auto error = [](const GptConfig& config, const BuildOptions& options) {
    return InvalidArgumentText([&] { BuildGpt(Registry(), config, options); });
  };
  GptConfig config = SmallGpt();
  config.hidden = 10;
  config.heads = 4;
  const std::string divisible = error(config, Options("auto", 1));
  EXPECT_PRED2(Contains, divisible, "hidden 10");
  EXPECT_PRED2(Contains, divisible, "heads 4");

  EXPECT_PRED2(Contains, error(SmallGpt(), Options("pp=3", 3)), "pp=3");
  EXPECT_PRED2(Contains, error(SmallGpt(), Options("dp=2,tp=2", 8)), "there are 8");
  BuildOptions auto_options = Options("auto", 8);
  auto_options.strategy.hierarchy = Shape{2, 2};
  EXPECT_PRED2(Contains, error(SmallGpt(), auto_options), "[2,2]");

  const std::vector<std::pair<int64_t GptConfig::*, std::string>> fields = {
      {&GptConfig::layers, "layers"}, {&GptConfig::hidden, "hidden"},
      {&GptConfig::heads, "heads"},   {&GptConfig::sequence, "sequence"},
      {&GptConfig::vocab, "vocab"},   {&GptConfig::batch, "batch"}};
  for (const auto& [field, name] : fields) {
    for (int64_t bad : {0, -4}) {
      config = SmallGpt();
      config.*field = bad;
      EXPECT_PRED2(Contains, error(config, Options("auto", 1)), name) << name << "=" << bad;
    }
  }
}

// A graph past kMaxGraphOps is refused before it is built, its size extrapolated from two
// small builds; one just under the cap matches the extrapolation.
TEST(GptModel, HugeGraphsAreRefusedBeforeTheyAreBuilt) {
  GptConfig config = SmallGpt();
  const auto ops = [&](int64_t layers, const std::string& strategy, int64_t devices) {
    config.layers = layers;
    return static_cast<int64_t>(
        BuildGpt(Registry(), config, Options(strategy, devices)).graph.ops().size());
  };
  const int64_t per_layer = ops(2, "auto", 1) - ops(1, "auto", 1);
  const int64_t fits = (kMaxGraphOps - ops(1, "auto", 1)) / per_layer;  // layers under the cap
  config.layers = fits * 2;
  const std::string refusal =
      InvalidArgumentText([&] { BuildGpt(Registry(), config, Options("auto", 1)); });
  EXPECT_PRED2(Contains, refusal, std::to_string(fits * 2) + " layers");
  EXPECT_PRED2(Contains, refusal, "more than the cap of 2000000");
  config.layers = int64_t{1} << 40;  // refused at once, not after an hour of building
  EXPECT_PRED2(Contains,
               InvalidArgumentText([&] { BuildGpt(Registry(), config, Options("pp=2", 2)); }),
               "more than the cap");
  // Linear in the layers: 6 layers over 2 stages is extrapolated from 2 and 4 exactly.
  EXPECT_EQ(ops(6, "pp=2", 2) - ops(4, "pp=2", 2), ops(4, "pp=2", 2) - ops(2, "pp=2", 2));
}

TEST(GptModel, Gpt3Preset) {
  const GptConfig c = GptConfig::Gpt3_175B();
  EXPECT_EQ(c.layers, 96);
  EXPECT_EQ(c.hidden, 12288);
  EXPECT_EQ(c.heads, 96);
  EXPECT_EQ(c.sequence, 2048);
  EXPECT_EQ(c.vocab, 50257);
  // About 175 billion parameters.
  EXPECT_GT(GptParameters(c), 174'000'000'000);
  EXPECT_LT(GptParameters(c), 176'000'000'000);
}

TEST(GptModel, Gpt3PresetBuilds) {
  const BuiltModel model =
      BuildGpt(Registry(), GptConfig::Gpt3_175B(), Options("dp=8,tp=8,pp=16", 1024));
  EXPECT_GT(model.graph.ops().size(), 10000u);
  EXPECT_EQ(ParameterElements(model), GptParameters(GptConfig::Gpt3_175B()));
  EXPECT_EQ(OpNamed(model, "block0/q/matmul").placement.ToString(), "cpu:0-63 [8,8]");
  EXPECT_EQ(OpNamed(model, "block95/fc2/matmul").placement.ToString(), "cpu:960-1023 [8,8]");
  model.graph.Validate(Registry());
}

// With attention=fused no tensor holds a [seq, seq] score matrix, forward or backward: each
// block has one fused_attention and one fused_attention_grad, and the parameters are the same.
TEST(GptModel, FusedAttentionHoldsNoScoreMatrix) {
  GptConfig config = SmallGpt();
  config.attention = ops::AttentionKind::kFused;
  const BuiltModel fused = BuildGpt(Registry(), config, Options("dp=2,tp=2", 4));
  fused.graph.Validate(Registry());
  EXPECT_EQ(CountOps(fused, "fused_attention"), config.layers);
  EXPECT_EQ(CountOps(fused, "fused_attention_grad"), config.layers);
  EXPECT_EQ(CountOps(fused, "softmax"), 0);
  EXPECT_EQ(ParameterElements(fused), GptParameters(config));
  const auto is_scores = [&](const graph::TensorNode& t) {
    const Shape& s = t.meta.shape;
    return s.rank() >= 2 && s[s.rank() - 1] == config.sequence &&
           s[s.rank() - 2] == config.sequence;
  };
  for (const graph::TensorNode& t : fused.graph.tensors()) EXPECT_FALSE(is_scores(t)) << t.name;
  config.attention = ops::AttentionKind::kUnfused;
  const BuiltModel unfused = BuildGpt(Registry(), config, Options("dp=2,tp=2", 4));
  int scores = 0;
  for (const graph::TensorNode& t : unfused.graph.tensors()) scores += is_scores(t);
  EXPECT_GT(scores, 0);  // the check above can see score matrices
}

}  // namespace
}  // namespace twinflow::models
