// The MLP and GPT builders: valid graphs, parameter counts and shapes, the pins a Megatron
// strategy prescribes, pipeline stage placements, errors naming the field, and the GPT-3 175B
// preset.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "engine/compiler/sbp_search.h"
#include "engine/core/error.h"
#include "engine/ops/builtin_ops.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "models/strategy.h"

namespace twinflow::models {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

template <typename F>
std::string InvalidArgumentText(F fn) {
  try {
    fn();
  } catch (const InvalidArgumentError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

const graph::OpRegistry& Registry() {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  return registry;
}

BuildOptions Options(const std::string& strategy, int64_t devices, bool training = true) {
  BuildOptions options;
  options.strategy = ParseStrategy(strategy);
  options.devices = devices;
  options.training = training;
  return options;
}

GptConfig SmallGpt() {
  GptConfig c;
  c.layers = 2;
  c.hidden = 16;
  c.heads = 2;
  c.sequence = 8;
  c.vocab = 16;
  c.batch = 4;
  return c;
}

MlpConfig SmallMlp() {
  MlpConfig c;
  c.widths = {8, 16, 12, 4};
  c.batch = 16;
  return c;
}

int64_t ParameterElements(const BuiltModel& model) {
  int64_t n = 0;
  for (graph::TensorId p : model.parameters) n += model.graph.tensor(p).meta.shape.numel();
  return n;
}

// The pin of the tensor named `name`, as text; "none" when unpinned.
std::string PinOf(const BuiltModel& model, const std::string& name) {
  const auto id = model.graph.FindTensor(name);
  if (!id) return "missing tensor " + name;
  const auto& pin = model.graph.tensor(*id).pin;
  return pin ? pin->ToString() : "none";
}

const graph::OpNode& OpNamed(const BuiltModel& model, const std::string& name) {
  const auto id = model.graph.FindOp(name);
  if (!id) throw InvalidArgumentError("test: no op named " + name);
  return model.graph.op(*id);
}

int CountOps(const BuiltModel& model, const std::string& type) {
  int n = 0;
  for (const graph::OpNode& op : model.graph.ops()) n += op.type == type;
  return n;
}

TEST(MlpModel, BuildsAValidTrainingGraph) {
  const BuiltModel model = BuildMlp(Registry(), SmallMlp(), Options("auto", 1));
  model.graph.Validate(Registry());
  EXPECT_EQ(model.feeds, (std::vector<std::string>{"x", "labels"}));
  EXPECT_EQ(model.graph.tensor(model.loss).meta.shape.rank(), 0);
  EXPECT_EQ(model.graph.tensor(model.loss).meta.dtype, DType::kF32);
  EXPECT_EQ(model.graph.tensor(*model.graph.FindTensor("x")).meta.shape, (Shape{16, 8}));
  EXPECT_EQ(model.graph.tensor(*model.graph.FindTensor("labels")).meta.dtype, DType::kI32);
  EXPECT_GE(CountOps(model, "assign"), static_cast<int>(model.parameters.size()));
}

TEST(MlpModel, ParameterCountsAndShapes) {
  const MlpConfig config = SmallMlp();
  const BuiltModel model = BuildMlp(Registry(), config, Options("auto", 1));
  ASSERT_EQ(model.parameters.size(), 2 * (config.widths.size() - 1));
  int64_t expected = 0;
  for (size_t i = 0; i + 1 < config.widths.size(); ++i) {
    const int64_t in = config.widths[i], out = config.widths[i + 1];
    expected += in * out + out;
    const std::string layer = "layer" + std::to_string(i);
    EXPECT_EQ(model.graph.tensor(model.parameters[2 * i]).meta.shape, (Shape{in, out})) << layer;
    EXPECT_EQ(model.graph.tensor(model.parameters[2 * i + 1]).meta.shape, (Shape{out})) << layer;
    EXPECT_EQ(model.graph.tensor(model.parameters[2 * i]).name, layer + "/weight");
    EXPECT_EQ(model.graph.tensor(model.parameters[2 * i + 1]).name, layer + "/bias");
  }
  EXPECT_EQ(ParameterElements(model), expected);
  for (graph::TensorId p : model.parameters) {
    EXPECT_EQ(model.graph.op(model.graph.tensor(p).producer).type, "variable");
  }
}

TEST(MlpModel, InferenceHasNoBackwardOrOptimizer) {
  const BuiltModel model = BuildMlp(Registry(), SmallMlp(), Options("auto", 1, false));
  model.graph.Validate(Registry());
  EXPECT_EQ(CountOps(model, "assign"), 0);
  const BuiltModel training = BuildMlp(Registry(), SmallMlp(), Options("auto", 1));
  EXPECT_LT(model.graph.ops().size(), training.graph.ops().size());
}

TEST(MlpModel, MegatronPinsUnderDp2Tp2) {
  const BuiltModel model = BuildMlp(Registry(), SmallMlp(), Options("dp=2,tp=2", 4));
  model.graph.Validate(Registry());
  EXPECT_EQ(PinOf(model, "x"), "(S(0),B)");
  EXPECT_EQ(PinOf(model, "labels"), "(S(0),B)");
  EXPECT_EQ(PinOf(model, "layer0/weight"), "(B,S(1))");  // column
  EXPECT_EQ(PinOf(model, "layer0/bias"), "(B,S(0))");
  EXPECT_EQ(PinOf(model, "layer1/weight"), "(B,S(0))");  // row
  EXPECT_EQ(PinOf(model, "layer1/bias"), "(B,B)");
  EXPECT_EQ(PinOf(model, "layer2/weight"), "(B,S(1))");  // column again
  EXPECT_EQ(OpNamed(model, "layer0/matmul").placement.ToString(), "cpu:0-3 [2,2]");
}

TEST(MlpModel, NothingPinnedUnderAuto) {
  const BuiltModel model = BuildMlp(Registry(), SmallMlp(), Options("auto", 4));
  for (const graph::TensorNode& t : model.graph.tensors()) {
    EXPECT_FALSE(t.pin.has_value()) << t.name << " is pinned to " << t.pin->ToString();
  }
}

TEST(MlpModel, PipelineStagesPlaceLayers) {
  MlpConfig config;
  config.widths = {8, 16, 4};
  config.batch = 16;
  const BuiltModel model = BuildMlp(Registry(), config, Options("dp=2,pp=2", 4));
  model.graph.Validate(Registry());
  EXPECT_EQ(OpNamed(model, "layer0/matmul").placement.ToString(), "cpu:0-1 [2,1]");
  EXPECT_EQ(OpNamed(model, "layer0/weight").placement.ToString(), "cpu:0-1 [2,1]");
  EXPECT_EQ(OpNamed(model, "layer1/matmul").placement.ToString(), "cpu:2-3 [2,1]");
  EXPECT_EQ(OpNamed(model, "layer1/bias").placement.ToString(), "cpu:2-3 [2,1]");
  EXPECT_EQ(OpNamed(model, "x").placement.ToString(), "cpu:0-1 [2,1]");
}

TEST(MlpModel, ErrorsNameTheField) {
  MlpConfig config = SmallMlp();
  config.widths = {8, 0, 4};
  EXPECT_PRED2(Contains,
               InvalidArgumentText([&] { BuildMlp(Registry(), config, Options("auto", 1)); }),
               "widths");
  config.widths = {8, -3, 4};
  EXPECT_PRED2(Contains,
               InvalidArgumentText([&] { BuildMlp(Registry(), config, Options("auto", 1)); }),
               "widths");
  config.widths = {8};
  EXPECT_PRED2(Contains,
               InvalidArgumentText([&] { BuildMlp(Registry(), config, Options("auto", 1)); }),
               "width");
  config = SmallMlp();
  config.batch = 0;
  EXPECT_PRED2(Contains,
               InvalidArgumentText([&] { BuildMlp(Registry(), config, Options("auto", 1)); }),
               "batch");
  config = SmallMlp();  // 3 layers
  EXPECT_PRED2(Contains,
               InvalidArgumentText([&] { BuildMlp(Registry(), config, Options("pp=4", 4)); }),
               "pp=4");
  EXPECT_PRED2(Contains,
               InvalidArgumentText([&] { BuildMlp(Registry(), config, Options("dp=2,tp=2", 8)); }),
               "there are 8");
}

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

// Every strategy's pins must leave the SBP search a signature for every op, including
// strategies with a degree of 1 (a mesh axis of one device).
void ExpectSearchable(const BuiltModel& model, const std::string& what) {
  compiler::SbpSearchOptions options;
  options.method = compiler::SbpSearchOptions::Method::kPropagate;
  try {
    const compiler::SbpAssignment a =
        compiler::SearchSbp(model.graph, Registry(), sbp::AlphaBetaCostModel(), options);
    EXPECT_EQ(a.signatures.size(), model.graph.ops().size()) << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
}

TEST(Models, EveryStrategyIsSearchable) {
  const std::vector<std::pair<std::string, int64_t>> strategies = {{"dp=2,tp=2", 4},
                                                                   {"dp=4", 4},
                                                                   {"tp=4", 4},
                                                                   {"dp=1", 1},
                                                                   {"dp=2,pp=2", 4},
                                                                   {"tp=2,pp=2", 4},
                                                                   {"dp=2,tp=2,pp=2,mb=2", 8}};
  for (const auto& [strategy, devices] : strategies) {
    ExpectSearchable(BuildMlp(Registry(), SmallMlp(), Options(strategy, devices)),
                     "mlp " + strategy);
    ExpectSearchable(BuildGpt(Registry(), SmallGpt(), Options(strategy, devices)),
                     "gpt " + strategy);
  }
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

}  // namespace
}  // namespace twinflow::models
