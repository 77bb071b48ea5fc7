// The MLP builder: a valid graph, parameter counts and shapes, the pins a Megatron strategy
// prescribes, pipeline stage placements and errors naming the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/model.h"
#include "tests/unit/model_test_helpers.h"

namespace twinflow::models {
namespace {

using namespace model_test_helpers;  // NOLINT: test helpers

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

}  // namespace
}  // namespace twinflow::models
