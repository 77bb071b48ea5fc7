#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/graph/graph_builder.h"
#include "tests/support/op_runner.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow {
namespace {

using graph::OpContext;
using graph::TensorMeta;

using testing::BuiltinRegistry;
using testing::CpuRegistry;
using testing::SignatureTexts;

Tensor Make(std::vector<double> values, DType dtype = DType::kF64) {
  Tensor t(Shape{static_cast<int64_t>(values.size())}, dtype);
  for (size_t i = 0; i < values.size(); ++i) t.SetDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

Tensor RunOp(const std::string& type, const std::vector<Tensor>& inputs) {
  testing::OpInstance instance{type, {}, {}, {}, {}};
  for (const Tensor& t : inputs) instance.inputs.push_back({t.shape(), t.dtype()});
  return testing::OpRunner{BuiltinRegistry(), CpuRegistry()}.RunSingle(instance, inputs)[0];
}

double GeluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(ActivationOps, KernelsComputeKnownValues) {
  const Tensor x = Make({-2, -0.5, 0, 0.5, 3});
  const Tensor relu = RunOp("relu", {x});
  const Tensor gelu = RunOp("gelu", {x});
  const Tensor tanh = RunOp("tanh", {x});
  const Tensor exp = RunOp("exp", {x});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.GetDouble(i);
    EXPECT_EQ(relu.GetDouble(i), std::max(v, 0.0));
    EXPECT_DOUBLE_EQ(gelu.GetDouble(i), GeluTanh(v));
    EXPECT_DOUBLE_EQ(tanh.GetDouble(i), std::tanh(v));
    EXPECT_DOUBLE_EQ(exp.GetDouble(i), std::exp(v));
  }
  EXPECT_NEAR(GeluTanh(1.0), 0.841192, 1e-6);  // the tanh approximation, not the erf form
  EXPECT_EQ(RunOp("relu", {Make({-1, 2}, DType::kF32)}).GetDouble(1), 2.0);
}

TEST(ActivationOps, GradientKernelsMatchDerivatives) {
  const Tensor x = Make({-2, -0.5, 0.3, 0.5, 3});
  const Tensor dy = Make({1, 2, -1, 0.5, 3});
  const Tensor relu_dx = RunOp("relu_grad", {dy, RunOp("relu", {x})});
  const Tensor gelu_dx = RunOp("gelu_grad", {dy, x});
  const Tensor tanh_dx = RunOp("tanh_grad", {dy, RunOp("tanh", {x})});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.GetDouble(i), g = dy.GetDouble(i), h = 1e-6;
    EXPECT_EQ(relu_dx.GetDouble(i), v > 0 ? g : 0.0);
    EXPECT_NEAR(gelu_dx.GetDouble(i), g * (GeluTanh(v + h) - GeluTanh(v - h)) / (2 * h), 1e-7);
    EXPECT_NEAR(tanh_dx.GetDouble(i), g * (1 - std::tanh(v) * std::tanh(v)), 1e-12);
  }
}

TEST(ActivationOps, InferRejectsBadInputs) {
  const auto& relu = BuiltinRegistry().Find("relu");
  const std::vector<TensorMeta> ints = {{Shape{3}, DType::kI32}};
  EXPECT_THROW(relu.infer(OpContext{"relu", {}, ints}), InvalidArgumentError);
  const std::vector<TensorMeta> mismatched = {{Shape{3}, DType::kF32}, {Shape{4}, DType::kF32}};
  EXPECT_THROW(BuiltinRegistry().Find("relu_grad").infer(OpContext{"relu_grad", {}, mismatched}),
               ShapeError);
  const std::vector<TensorMeta> two = {{Shape{3}, DType::kF32}, {Shape{3}, DType::kF32}};
  EXPECT_THROW(relu.infer(OpContext{"relu", {}, two}), InvalidArgumentError);
  try {
    relu.infer(OpContext{"relu", {}, ints});
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("relu"), std::string::npos);
  }
}

TEST(ActivationOps, ListsSignatures) {
  const std::vector<TensorMeta> x = {{Shape{4, 5}, DType::kF32}};
  EXPECT_EQ(SignatureTexts("relu", {}, x),
            (std::vector<std::string>{"S(0) -> S(0)", "S(1) -> S(1)", "B -> B", "P(max) -> P(max)",
                                      "P(min) -> P(min)"}));
  EXPECT_EQ(SignatureTexts("gelu", {}, x),
            (std::vector<std::string>{"S(0) -> S(0)", "S(1) -> S(1)", "B -> B"}));
  const std::vector<TensorMeta> xx = {x[0], x[0]};
  EXPECT_EQ(
      SignatureTexts("tanh_grad", {}, xx),
      (std::vector<std::string>{"S(0),S(0) -> S(0)", "S(1),S(1) -> S(1)", "B,B -> B", "P,B -> P"}));
}

TEST(ActivationOps, GradientsUseTheHelperOps) {
  graph::GraphBuilder builder(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
  const auto x = builder.Input("x", Shape{2, 3});
  for (const std::string type : {"relu", "gelu", "tanh", "exp"}) {
    const auto y = builder.Add1(type, {x});
    const graph::OpNode node = builder.graph().op(builder.graph().tensor(y).producer);
    const auto grads = BuiltinRegistry().Find(type).gradient(builder, node, {y});
    ASSERT_TRUE(grads[0].has_value());
    EXPECT_EQ(builder.meta(*grads[0]).shape, (Shape{2, 3}));
    const std::string& grad_type =
        builder.graph().op(builder.graph().tensor(*grads[0]).producer).type;
    EXPECT_EQ(grad_type, type == "exp" ? "mul" : type + "_grad");
    EXPECT_FALSE(
        BuiltinRegistry().Find(type).gradient(builder, node, {std::nullopt})[0].has_value());
  }
  EXPECT_FALSE(static_cast<bool>(BuiltinRegistry().Find("gelu_grad").gradient));
}

}  // namespace
}  // namespace twinflow
