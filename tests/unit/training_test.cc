// End-to-end training on the ReferenceInterpreter: the built models' backward graphs and
// optimizers, run by the CPU kernels, lower the loss on a fixed batch, and do so bit for bit
// the same way every time.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"
#include "engine/interpreter/reference_interpreter.h"
#include "engine/ops/builtin_ops.h"
#include "kernels/cpu/cpu_kernels.h"
#include "models/model.h"
#include "models/strategy.h"

namespace twinflow::models {
namespace {

using graph::OptimizerConfig;

const graph::OpRegistry& Registry() {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  return registry;
}

const kernels::KernelRegistry& Kernels() {
  static const kernels::KernelRegistry registry = kernels::CpuKernels();
  return registry;
}

BuildOptions SingleDevice(OptimizerConfig optimizer, const std::string& strategy = "auto",
                          int64_t devices = 1) {
  BuildOptions options;
  options.strategy = ParseStrategy(strategy);
  options.devices = devices;
  options.training = true;
  options.optimizer = optimizer;
  options.seed = 7;
  return options;
}

OptimizerConfig Sgd(double lr) {
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kSgd;
  c.learning_rate = lr;
  return c;
}

OptimizerConfig Adam(double lr) {
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kAdam;
  c.learning_rate = lr;
  return c;
}

Tensor RandomLabels(Shape shape, int64_t classes, Rng& rng) {
  Tensor labels(std::move(shape), DType::kI32);
  for (int64_t i = 0; i < labels.numel(); ++i) labels.SetDouble(i, rng.UniformInt(0, classes - 1));
  return labels;
}

// Runs `steps` training steps of `model` on the same `feeds`; returns the loss of each step
// (computed before that step's update).
std::vector<float> Train(const BuiltModel& model, const std::map<std::string, Tensor>& feeds,
                         int steps) {
  interpreter::ReferenceInterpreter interpreter(model.graph, Kernels());
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    const auto fetched = interpreter.Step(feeds, {model.loss});
    const Tensor& loss = fetched.at(model.loss);
    EXPECT_EQ(loss.numel(), 1);
    EXPECT_EQ(loss.dtype(), DType::kF32);
    losses.push_back(loss.data<float>()[0]);
    EXPECT_TRUE(std::isfinite(losses.back())) << "step " << step;
  }
  return losses;
}

std::string Trace(const std::vector<float>& losses) {
  std::string text;
  for (float l : losses) text += std::to_string(l) + " ";
  return text;
}

// Every loss bit-identical (compared as floats: no NaNs reach here, see Train).
void ExpectIdentical(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "step " << i;
}

MlpConfig SmallMlp() {
  MlpConfig config;
  config.widths = {8, 16, 4};
  config.batch = 16;
  return config;
}

std::map<std::string, Tensor> MlpFeeds(const MlpConfig& config, uint64_t seed) {
  Rng rng(seed);
  std::map<std::string, Tensor> feeds;
  feeds["x"] = Tensor::Random(Shape{config.batch, config.widths.front()}, DType::kF32, rng);
  feeds["labels"] = RandomLabels(Shape{config.batch}, config.widths.back(), rng);
  return feeds;
}

TEST(Training, MlpSgdLossFalls) {
  const BuiltModel model = BuildMlp(Registry(), SmallMlp(), SingleDevice(Sgd(0.5)));
  const std::vector<float> losses = Train(model, MlpFeeds(SmallMlp(), 11), 30);
  // The first loss is near ln(4) for a freshly initialised 4-class classifier.
  EXPECT_GT(losses.front(), 0.5);
  EXPECT_LT(losses.back(), 0.5f * losses.front()) << Trace(losses);
}

TEST(Training, MlpSgdIsDeterministic) {
  const BuiltModel a = BuildMlp(Registry(), SmallMlp(), SingleDevice(Sgd(0.5)));
  const BuiltModel b = BuildMlp(Registry(), SmallMlp(), SingleDevice(Sgd(0.5)));
  ExpectIdentical(Train(a, MlpFeeds(SmallMlp(), 11), 30), Train(b, MlpFeeds(SmallMlp(), 11), 30));
}

TEST(Training, MlpSgdWithMomentumLossFalls) {
  OptimizerConfig optimizer = Sgd(0.1);
  optimizer.momentum = 0.9;
  const BuiltModel model = BuildMlp(Registry(), SmallMlp(), SingleDevice(optimizer));
  const std::vector<float> losses = Train(model, MlpFeeds(SmallMlp(), 11), 30);
  EXPECT_LT(losses.back(), 0.5f * losses.front()) << Trace(losses);
}

TEST(Training, MlpAdamLossFallsDeterministically) {
  const BuiltModel model = BuildMlp(Registry(), SmallMlp(), SingleDevice(Adam(0.05)));
  const std::vector<float> first = Train(model, MlpFeeds(SmallMlp(), 12), 30);
  EXPECT_LT(first.back(), 0.5f * first.front()) << Trace(first);
  // A second interpreter on the same graph starts again from the seeded initial values.
  ExpectIdentical(first, Train(model, MlpFeeds(SmallMlp(), 12), 30));
}

TEST(Training, MlpAdamWLossFalls) {
  OptimizerConfig optimizer = Adam(0.05);
  optimizer.kind = OptimizerConfig::Kind::kAdamW;
  optimizer.weight_decay = 0.01;
  const BuiltModel model = BuildMlp(Registry(), SmallMlp(), SingleDevice(optimizer));
  const std::vector<float> losses = Train(model, MlpFeeds(SmallMlp(), 13), 30);
  EXPECT_LT(losses.back(), 0.5f * losses.front()) << Trace(losses);
}

TEST(Training, UpdatesLandInTheVariables) {
  const BuiltModel model = BuildMlp(Registry(), SmallMlp(), SingleDevice(Sgd(0.5)));
  interpreter::ReferenceInterpreter interpreter(model.graph, Kernels());
  const Tensor before = interpreter.variable("layer0/weight");
  interpreter.Step(MlpFeeds(SmallMlp(), 11), {model.loss});
  const Tensor after = interpreter.variable("layer0/weight");
  EXPECT_EQ(after.shape(), before.shape());
  EXPECT_FALSE(BitEqual(before, after));
}

TEST(Training, DifferentSeedsGiveDifferentStarts) {
  BuildOptions options = SingleDevice(Sgd(0.5));
  const BuiltModel a = BuildMlp(Registry(), SmallMlp(), options);
  options.seed = 8;
  const BuiltModel b = BuildMlp(Registry(), SmallMlp(), options);
  interpreter::ReferenceInterpreter ia(a.graph, Kernels()), ib(b.graph, Kernels());
  EXPECT_FALSE(BitEqual(ia.variable("layer0/weight"), ib.variable("layer0/weight")));
}

GptConfig TinyGpt() {
  GptConfig config;
  config.layers = 1;
  config.hidden = 16;
  config.heads = 2;
  config.sequence = 8;
  config.vocab = 16;
  config.batch = 4;
  return config;
}

std::map<std::string, Tensor> GptFeeds(const GptConfig& config, uint64_t seed) {
  Rng rng(seed);
  std::map<std::string, Tensor> feeds;
  const Shape tokens{config.batch, config.sequence};
  feeds["ids"] = RandomLabels(tokens, config.vocab, rng);
  feeds["labels"] = RandomLabels(tokens, config.vocab, rng);
  return feeds;
}

TEST(Training, TinyGptAdamLossFalls) {
  const BuiltModel model = BuildGpt(Registry(), TinyGpt(), SingleDevice(Adam(0.01)));
  const std::vector<float> losses = Train(model, GptFeeds(TinyGpt(), 21), 20);
  // Near ln(16) at the start.
  EXPECT_NEAR(losses.front(), std::log(16.0), 0.5) << Trace(losses);
  EXPECT_LT(losses.back(), 0.5f * losses.front()) << Trace(losses);
  for (size_t i = 1; i < losses.size(); ++i) EXPECT_LT(losses[i], losses.front()) << i;
}

TEST(Training, TinyGptIsDeterministic) {
  const BuiltModel model = BuildGpt(Registry(), TinyGpt(), SingleDevice(Adam(0.01)));
  ExpectIdentical(Train(model, GptFeeds(TinyGpt(), 21), 5),
                  Train(model, GptFeeds(TinyGpt(), 21), 5));
}

// A Megatron build differs in its logical graph only by pins and by the class-split loss (the
// logits end split by class); on one device it must train like the plain build.
void ExpectClose(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], 1e-4 * (1 + std::fabs(b[i]))) << "step " << i;
  }
}

TEST(Training, TensorParallelMlpGraphTrainsLikeThePlainOne) {
  MlpConfig config;
  config.widths = {8, 16, 12, 4};  // three layers: the last is column-parallel, classes split
  config.batch = 16;
  const BuiltModel plain = BuildMlp(Registry(), config, SingleDevice(Sgd(0.5)));
  const BuiltModel megatron = BuildMlp(Registry(), config, SingleDevice(Sgd(0.5), "dp=2,tp=2", 4));
  ExpectClose(Train(megatron, MlpFeeds(config, 14), 10), Train(plain, MlpFeeds(config, 14), 10));
}

TEST(Training, TensorParallelGptGraphTrainsLikeThePlainOne) {
  const BuiltModel plain = BuildGpt(Registry(), TinyGpt(), SingleDevice(Adam(0.01)));
  const BuiltModel megatron =
      BuildGpt(Registry(), TinyGpt(), SingleDevice(Adam(0.01), "dp=2,tp=2", 4));
  ExpectClose(Train(megatron, GptFeeds(TinyGpt(), 22), 5),
              Train(plain, GptFeeds(TinyGpt(), 22), 5));
}

}  // namespace
}  // namespace twinflow::models
