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
#include "engine/parallel/strategy.h"
#include "kernels/cpu/cpu_kernels.h"
#include "models/model.h"

namespace twinflow::models {
namespace {

using namespace twinflow::parallel;  // the strategy

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

// Mixed precision on one device: bf16 learns as fp32 does, to within bf16's rounding.
TEST(Training, Bf16GptLearnsLikeFp32) {
  const std::vector<float> fp32 =
      Train(BuildGpt(Registry(), TinyGpt(), SingleDevice(Adam(0.01))), GptFeeds(TinyGpt(), 21), 20);
  const std::vector<float> bf16 =
      Train(BuildGpt(Registry(), TinyGpt(), SingleDevice(Adam(0.01), "dp=1,precision=bf16")),
            GptFeeds(TinyGpt(), 21), 20);
  EXPECT_LT(bf16.back(), 0.5f * bf16.front()) << Trace(bf16);
  for (size_t i = 0; i < fp32.size(); ++i) {
    EXPECT_NEAR(bf16[i], fp32[i], 2e-2 * fp32[i]) << "step " << i;  // after 20 steps' drift
  }
}

// The L2 norm of the change of every parameter of the model, after one step.
double StepChangeNorm(const BuiltModel& model, const std::map<std::string, Tensor>& feeds) {
  interpreter::ReferenceInterpreter interpreter(model.graph, Kernels());
  std::map<std::string, Tensor> before;
  for (graph::TensorId p : model.parameters) {
    const std::string name = model.graph.op(model.graph.tensor(p).producer).name;
    before.emplace(name, interpreter.variable(name));
  }
  interpreter.Step(feeds, {model.loss});
  double sum = 0;
  for (const auto& [name, value] : before) {
    const Tensor& after = interpreter.variable(name);
    for (int64_t i = 0; i < value.numel(); ++i) {
      const double d = after.GetDouble(i) - value.GetDouble(i);
      sum += d * d;
    }
  }
  return std::sqrt(sum);
}

// Clipping by the global norm: an SGD step then moves the parameters by exactly lr * clip_grad
// (the gradients' norm here is far above the threshold); a threshold above the norm changes
// nothing.
TEST(Training, ClippingBoundsTheStepByTheGlobalNorm) {
  OptimizerConfig sgd = Sgd(0.5);
  const double free_step =
      StepChangeNorm(BuildMlp(Registry(), SmallMlp(), SingleDevice(sgd)), MlpFeeds(SmallMlp(), 11));
  sgd.clip_grad = 1e-3;
  const double clipped =
      StepChangeNorm(BuildMlp(Registry(), SmallMlp(), SingleDevice(sgd)), MlpFeeds(SmallMlp(), 11));
  ASSERT_GT(free_step, 0.5 * 1e-3 * 10);
  EXPECT_NEAR(clipped, 0.5 * 1e-3, 1e-6);
  sgd.clip_grad = 1e9;
  EXPECT_EQ(
      StepChangeNorm(BuildMlp(Registry(), SmallMlp(), SingleDevice(sgd)), MlpFeeds(SmallMlp(), 11)),
      free_step);
}

// Dynamic loss scaling in fp16: with a scale far too large the gradients overflow, and each
// such step is skipped (the loss of the fixed batch repeats exactly) while the scale halves;
// once it fits, training proceeds and the loss falls.
TEST(Training, Fp16LossScalingSkipsOverflowsAndRecovers) {
  OptimizerConfig adam = Adam(0.01);
  adam.loss_scale = std::ldexp(1.0, 40);
  const BuiltModel model =
      BuildGpt(Registry(), TinyGpt(), SingleDevice(adam, "dp=1,precision=fp16"));
  interpreter::ReferenceInterpreter interpreter(model.graph, Kernels());
  const auto feeds = GptFeeds(TinyGpt(), 21);
  std::vector<float> losses;
  std::vector<double> scales;
  for (int step = 0; step < 60; ++step) {
    scales.push_back(interpreter.variable("loss_scale").GetDouble(0));
    losses.push_back(interpreter.Step(feeds, {model.loss}).at(model.loss).data<float>()[0]);
  }
  size_t skipped = 0;
  while (skipped + 1 < scales.size() && scales[skipped + 1] < scales[skipped]) ++skipped;
  EXPECT_GE(skipped, 10u) << "2^40 overflows fp16 for many halvings";
  for (size_t i = 0; i <= skipped; ++i) {
    // Steps 0 .. skipped - 1 overflowed; step `skipped` still sees the untouched parameters.
    EXPECT_EQ(losses[i], losses[0]) << "step " << i;
    EXPECT_EQ(scales[i], std::ldexp(1.0, 40 - static_cast<int>(i)));
  }
  EXPECT_LT(losses.back(), 0.7f * losses.front()) << Trace(losses);
  EXPECT_EQ(interpreter.variable("loss_scale_good_steps").GetDouble(0),
            static_cast<double>(losses.size() - skipped));
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
