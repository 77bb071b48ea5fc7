// reduce_sum, reduce_mean, reduce_max and their gradient helpers: inference errors, hand
// computed kernel results (including a device's slice of a split reduced axis), the declared
// signatures, and the gradients autograd builds.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/error.h"
#include "engine/graph/autograd.h"
#include "engine/interpreter/reference_interpreter.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow::testing {
namespace {

using graph::TensorMeta;

Attrs Axes(std::vector<int64_t> axes, bool keepdims = false) {
  return Attrs{{"axes", std::move(axes)}, {"keepdims", keepdims}};
}

TEST(ReductionOps, InfersShapes) {
  const std::vector<TensorMeta> x{{Shape{2, 3, 4}, DType::kF32}};
  EXPECT_EQ(InferOp("reduce_sum", Axes({1}), x)[0].shape, (Shape{2, 4}));
  EXPECT_EQ(InferOp("reduce_mean", Axes({-1, 0}, true), x)[0].shape, (Shape{1, 3, 1}));
  EXPECT_EQ(InferOp("reduce_max", Attrs{}, x)[0].shape, Shape());
}

TEST(ReductionOps, RejectsBadInputs) {
  const std::vector<TensorMeta> x{{Shape{2, 3}, DType::kF32}};
  EXPECT_THROW(InferOp("reduce_sum", Axes({2}), x), InvalidArgumentError);
  EXPECT_THROW(InferOp("reduce_sum", Axes({1, -1}), x), InvalidArgumentError);
  EXPECT_THROW(InferOp("reduce_sum", Axes({0}), {{Shape{2}, DType::kI32}}), InvalidArgumentError);
  EXPECT_THROW(InferOp("reduce_max", Axes({0}), {{Shape{0, 2}, DType::kF32}}), ShapeError);
  EXPECT_THROW(InferOp("broadcast_reduced_like", Axes({1}),
                       {{Shape{3}, DType::kF32}, {Shape{2, 3}, DType::kF32}}),
               ShapeError);
  try {
    InferOp("reduce_mean", Axes({5}), x);
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("reduce_mean"), std::string::npos) << e.what();
  }
}

TEST(ReductionOps, KernelsComputeHandResults) {
  const Tensor x = Values(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(Flat(RunOp("reduce_sum", Axes({1}), {x})[0]), (std::vector<double>{6, 15}));
  EXPECT_EQ(Flat(RunOp("reduce_sum", Axes({0}, true), {x})[0]), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(Flat(RunOp("reduce_mean", Axes({1}), {x})[0]), (std::vector<double>{2, 5}));
  EXPECT_EQ(Flat(RunOp("reduce_max", Axes({0}), {x})[0]), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(Flat(RunOp("reduce_sum", Attrs{}, {x})[0]), (std::vector<double>{21}));
  const Tensor dy = Values(Shape{2}, {1, 2});
  EXPECT_EQ(Flat(RunOp("broadcast_reduced_like",
                       Attrs{{"axes", std::vector<int64_t>{1}}, {"scale", 0.5}}, {dy, x})[0]),
            (std::vector<double>{0.5, 0.5, 0.5, 1, 1, 1}));
}

TEST(ReductionOps, MaxGradientGivesEveryTieTheFullGradient) {
  const Tensor x = Values(Shape{2, 3}, {1, 3, 3, 5, 4, 0});
  const Tensor y = Values(Shape{2}, {3, 5});
  const Tensor dy = Values(Shape{2}, {10, 20});
  EXPECT_EQ(Flat(RunOp("reduce_max_grad", Axes({1}), {x, y, dy})[0]),
            (std::vector<double>{0, 10, 10, 20, 0, 0}));
}

// One device of a split reduced axis: the mean divides by the logical extent, the max of an
// empty slice is the identity of max.
TEST(ReductionOps, SlicesOfASplitReducedAxisGivePartials) {
  const Attrs attrs = Axes({1});
  const Tensor x = Values(Shape{2, 2}, {1, 2, 4, 5});  // columns 1..2 of a [2, 4] tensor
  Tensor y(Shape{2}, DType::kF32);
  kernels::KernelContext ctx{
      attrs,         {&x},      {&y}, {Region{{{0, 2}, {1, 3}}}}, {Region::Full(y.shape())},
      {Shape{2, 4}}, {Shape{2}}};
  CpuRegistry().Find({"reduce_mean", DeviceType::kCpu, DType::kF32})(ctx);
  EXPECT_EQ(Flat(y), (std::vector<double>{0.75, 2.25}));

  const Tensor empty(Shape{2, 0}, DType::kF32);
  Tensor m(Shape{2}, DType::kF32);
  const kernels::KernelContext max_ctx = kernels::WholeTensorContext(attrs, {&empty}, {&m});
  CpuRegistry().Find({"reduce_max", DeviceType::kCpu, DType::kF32})(max_ctx);
  EXPECT_EQ(m.GetDouble(0), -std::numeric_limits<double>::infinity());
}

TEST(ReductionOps, KernelsRejectInconsistentPhysicalShapes) {
  const Tensor x = Values(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y(Shape{3}, DType::kF32);
  const Attrs attrs = Axes({1});
  const kernels::KernelContext ctx = kernels::WholeTensorContext(attrs, {&x}, {&y});
  EXPECT_THROW(CpuRegistry().Find({"reduce_sum", DeviceType::kCpu, DType::kF32})(ctx), ShapeError);
}

TEST(ReductionOps, DeclaresSplitPartialAndBroadcastRules) {
  const std::vector<TensorMeta> x{{Shape{4, 6}, DType::kF32}};
  EXPECT_EQ(SignatureTexts("reduce_sum", Axes({1}), x),
            (std::vector<std::string>{"S(0) -> S(0)", "S(1) -> P", "P -> P", "B -> B"}));
  EXPECT_EQ(SignatureTexts("reduce_mean", Axes({0}, true), x),
            (std::vector<std::string>{"S(0) -> P", "S(1) -> S(1)", "P -> P", "B -> B"}));
  EXPECT_EQ(
      SignatureTexts("reduce_max", Axes({0}), x),
      (std::vector<std::string>{"S(0) -> P(max)", "S(1) -> S(0)", "P(max) -> P(max)", "B -> B"}));
}

// loss = sum(reduce_mean(x, 1)) + sum(reduce_max(x, 0)): dx = 1/3 + the max mask.
TEST(ReductionOps, GradientsBuildAndMatchHandValues) {
  graph::GraphBuilder builder(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
  const graph::TensorId x = builder.Input("x", Shape{2, 3});
  const graph::TensorId mean = builder.Add1("reduce_mean", {x}, Axes({1}));
  const graph::TensorId max = builder.Add1("reduce_max", {x}, Axes({0}));
  const graph::TensorId loss = builder.Add1("add", {builder.Add1("reduce_sum", {mean}, Axes({0})),
                                                    builder.Add1("reduce_sum", {max}, Axes({0}))});
  const auto grads = graph::AddBackward(builder, loss, {x});
  const graph::TensorId dx = grads.at(x);
  EXPECT_EQ(builder.meta(dx).shape, (Shape{2, 3}));
  interpreter::ReferenceInterpreter interp(builder.graph(), CpuRegistry());
  const auto out = interp.Step({{"x", Values(Shape{2, 3}, {1, 9, 3, 4, 5, 6})}}, {dx});
  const std::vector<double> got = Flat(out.at(dx));
  const std::vector<double> want{1.0 / 3, 4.0 / 3, 1.0 / 3, 4.0 / 3, 1.0 / 3, 4.0 / 3};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

}  // namespace
}  // namespace twinflow::testing
