// layer_norm, rms_norm and their gradients: inference errors, hand computed results, declared
// signatures, and the gradient ops autograd builds.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/graph/autograd.h"
#include "engine/interpreter/reference_interpreter.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow::testing {
namespace {

using graph::TensorMeta;

const TensorMeta kX{Shape{4, 6}, DType::kF32};
const TensorMeta kH{Shape{6}, DType::kF32};

TEST(NormalizationOps, RejectsBadInputs) {
  EXPECT_EQ(InferOp("layer_norm", {}, {kX, kH, kH})[0], kX);
  EXPECT_THROW(InferOp("layer_norm", {}, {kX, {Shape{4}, DType::kF32}, kH}), ShapeError);
  EXPECT_THROW(InferOp("layer_norm", {}, {kX, kH, {Shape{6}, DType::kF64}}), InvalidArgumentError);
  EXPECT_THROW(InferOp("layer_norm", Attrs{{"epsilon", -1.0}}, {kX, kH, kH}), InvalidArgumentError);
  EXPECT_THROW(InferOp("layer_norm", {}, {{Shape(), DType::kF32}, {Shape{}}, {Shape{}}}),
               ShapeError);
}

TEST(NormalizationOps, KernelComputesHandResult) {
  const Tensor x = Values(Shape{2, 3}, {1, 2, 3, 5, 5, 5});
  const Tensor gamma = Values(Shape{3}, {1, 2, 1});
  const Tensor beta = Values(Shape{3}, {0, 0, 10});
  const std::vector<double> y =
      Flat(RunOp("layer_norm", Attrs{{"epsilon", 0.0}}, {x, gamma, beta})[0]);
  const double r = std::sqrt(1.5);  // 1 / sqrt(var) with var = 2/3
  const std::vector<double> want{-r, 0, 10 + r, 0, 0, 10};
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(y[i], want[i], 1e-5) << i;
  // A constant row has zero variance: epsilon keeps it finite.
  const std::vector<double> y_eps =
      Flat(RunOp("layer_norm", Attrs{{"epsilon", 1e-5}}, {x, gamma, beta})[0]);
  for (size_t i = 3; i < 6; ++i) EXPECT_NEAR(y_eps[i], want[i], 1e-5) << i;

  const Tensor dy = Values(Shape{2, 3}, {1, 1, 1, 1, 0, 0});
  const std::vector<Tensor> g =
      RunOp("layer_norm_grad", Attrs{{"epsilon", 0.0}},
            {Values(Shape{2, 3}, {1, 2, 3, 0, 1, 2}), Values(Shape{3}, {1, 1, 1}), dy});
  EXPECT_EQ(Flat(g[2]), (std::vector<double>{2, 1, 1}));  // dbeta: column sums of dy
  // dgamma = sum of dy * xhat; xhat rows are both (-r, 0, r).
  EXPECT_NEAR(g[1].GetDouble(0), -2 * r, 1e-5);
  EXPECT_NEAR(g[1].GetDouble(2), r, 1e-5);
  // A uniform dy with gamma = 1 moves no normalised value: dx of row 0 is zero.
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(g[0].GetDouble(i), 0, 1e-5);
}

TEST(NormalizationOps, RmsNormComputesHandResult) {
  EXPECT_EQ(InferOp("rms_norm", {}, {kX, kH})[0], kX);
  EXPECT_THROW(InferOp("rms_norm", {}, {kX, kH, kH}), InvalidArgumentError);
  EXPECT_THROW(InferOp("rms_norm", {}, {kX, {Shape{4}, DType::kF32}}), ShapeError);
  // Row (3, 4): mean square 12.5, so y = x / sqrt(12.5) * gamma; no centring.
  const Tensor x = Values(Shape{1, 2}, {3, 4});
  const Tensor gamma = Values(Shape{2}, {1, 2});
  const std::vector<double> y = Flat(RunOp("rms_norm", Attrs{{"epsilon", 0.0}}, {x, gamma})[0]);
  const double r = 1 / std::sqrt(12.5);
  EXPECT_NEAR(y[0], 3 * r, 1e-6);
  EXPECT_NEAR(y[1], 8 * r, 1e-6);
  // dgamma = dy * xhat; dy along x (the row's own direction) moves no normalised value.
  const std::vector<Tensor> g =
      RunOp("rms_norm_grad", Attrs{{"epsilon", 0.0}}, {x, Values(Shape{2}, {1, 1}), x});
  EXPECT_NEAR(g[1].GetDouble(0), 9 * r, 1e-5);
  EXPECT_NEAR(g[1].GetDouble(1), 16 * r, 1e-5);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(g[0].GetDouble(i), 0, 1e-6);
}

TEST(NormalizationOps, DeclaresSignatures) {
  EXPECT_EQ(SignatureTexts("rms_norm", {}, {kX, kH}),
            (std::vector<std::string>{"S(0),B -> S(0)", "B,P -> P", "B,B -> B"}));
  EXPECT_EQ(SignatureTexts("rms_norm_grad", {}, {kX, kH, kX}),
            (std::vector<std::string>{"S(0),B,S(0) -> S(0),P", "B,B,P -> P,P", "B,P,B -> P,B",
                                      "B,B,B -> B,B"}));
  EXPECT_EQ(SignatureTexts("layer_norm", {}, {kX, kH, kH}),
            (std::vector<std::string>{"S(0),B,B -> S(0)", "B,P,P -> P", "B,B,B -> B"}));
  EXPECT_EQ(SignatureTexts("layer_norm_grad", {}, {kX, kH, kX}),
            (std::vector<std::string>{"S(0),B,S(0) -> S(0),P,P", "B,B,P -> P,P,P", "B,P,B -> P,B,B",
                                      "B,B,B -> B,B,B"}));
}

TEST(NormalizationOps, GradientBuildsOneGradOpForAllThreeInputs) {
  graph::GraphBuilder builder(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
  const graph::TensorId x = builder.Input("x", Shape{4, 6});
  const graph::TensorId gamma = builder.Input("gamma", Shape{6});
  const graph::TensorId beta = builder.Input("beta", Shape{6});
  const graph::TensorId y = builder.Add1("layer_norm", {x, gamma, beta});
  const graph::TensorId loss =
      builder.Add1("reduce_sum", {y}, Attrs{{"axes", std::vector<int64_t>{0, 1}}});
  const auto grads = graph::AddBackward(builder, loss, {x, gamma, beta});
  EXPECT_EQ(builder.meta(grads.at(x)).shape, (Shape{4, 6}));
  EXPECT_EQ(builder.meta(grads.at(gamma)).shape, (Shape{6}));
  EXPECT_EQ(builder.meta(grads.at(beta)).shape, (Shape{6}));
  interpreter::ReferenceInterpreter interp(builder.graph(), CpuRegistry());
  Rng rng(3);
  std::map<std::string, Tensor> feeds;
  feeds["x"] = Tensor::Random(Shape{4, 6}, DType::kF32, rng);
  feeds["gamma"] = Tensor::Random(Shape{6}, DType::kF32, rng);
  feeds["beta"] = Tensor::Random(Shape{6}, DType::kF32, rng);
  const auto out = interp.Step(feeds, {grads.at(beta)});
  EXPECT_EQ(Flat(out.at(grads.at(beta))), std::vector<double>(6, 4.0));
}

}  // namespace
}  // namespace twinflow::testing
