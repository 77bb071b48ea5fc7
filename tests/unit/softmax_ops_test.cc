// softmax, log_softmax, sparse_softmax_cross_entropy and its class-split construction:
// inference errors, hand computed kernel results, declared signatures, and gradients (the
// class-split graph must give the fused op's loss and gradient).
#include "engine/ops/softmax_ops.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/graph/autograd.h"
#include "engine/interpreter/reference_interpreter.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow::testing {
namespace {

using graph::TensorMeta;

TEST(SoftmaxOps, RejectsBadInputs) {
  EXPECT_THROW(InferOp("softmax", {}, {{Shape(), DType::kF32}}), ShapeError);
  EXPECT_THROW(InferOp("softmax", Attrs{{"axis", int64_t{2}}}, {{Shape{2, 3}, DType::kF32}}),
               InvalidArgumentError);
  EXPECT_THROW(InferOp("sparse_softmax_cross_entropy", {},
                       {{Shape{4, 5}, DType::kF32}, {Shape{5}, DType::kI32}}),
               ShapeError);
  EXPECT_THROW(InferOp("sparse_softmax_cross_entropy", {},
                       {{Shape{4, 5}, DType::kF32}, {Shape{4}, DType::kF32}}),
               InvalidArgumentError);
  EXPECT_EQ(InferOp("sparse_softmax_cross_entropy", {},
                    {{Shape{4, 5}, DType::kF32}, {Shape{4}, DType::kI64}})[0],
            (TensorMeta{Shape{4}, DType::kF32}));
}

TEST(SoftmaxOps, KernelsComputeHandResults) {
  const Tensor x = Values(Shape{2, 2}, {0, std::log(3.0), 1, 1});
  const std::vector<double> soft = Flat(RunOp("softmax", {}, {x})[0]);
  const std::vector<double> want{0.25, 0.75, 0.5, 0.5};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(soft[i], want[i], 1e-6);
  const std::vector<double> log_soft = Flat(RunOp("log_softmax", {}, {x})[0]);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(log_soft[i], std::log(want[i]), 1e-6);
  // Over axis 0 instead: columns [0, 1] and [log 3, 1].
  const std::vector<double> cols = Flat(RunOp("softmax", Attrs{{"axis", int64_t{0}}}, {x})[0]);
  EXPECT_NEAR(cols[0], 1 / (1 + std::exp(1.0)), 1e-6);

  const Tensor labels = Values(Shape{2}, {1, 0}, DType::kI32);
  const std::vector<double> loss = Flat(RunOp("sparse_softmax_cross_entropy", {}, {x, labels})[0]);
  EXPECT_NEAR(loss[0], -std::log(0.75), 1e-6);
  EXPECT_NEAR(loss[1], std::log(2.0), 1e-6);
  const Tensor dloss = Values(Shape{2}, {1, 2});
  const std::vector<double> dx =
      Flat(RunOp("sparse_softmax_cross_entropy_grad", {}, {x, labels, dloss})[0]);
  const std::vector<double> dx_want{0.25, -0.25, -1, 1};
  for (size_t i = 0; i < dx_want.size(); ++i) EXPECT_NEAR(dx[i], dx_want[i], 1e-6);

  const Tensor bad = Values(Shape{2}, {2, 0}, DType::kI64);
  EXPECT_THROW(RunOp("sparse_softmax_cross_entropy", {}, {x, bad}), InvalidArgumentError);
}

// A device holding classes [2, 4) of 5: it picks only the labels in its range.
TEST(SoftmaxOps, PickLabelLogitReadsItsClassRange) {
  const Tensor logits = Values(Shape{2, 2}, {10, 11, 20, 21});
  const Tensor labels = Values(Shape{2}, {3, 0}, DType::kI32);
  Tensor out(Shape{2}, DType::kF32);
  const Attrs attrs;
  const kernels::KernelContext ctx{attrs,
                                   {&logits, &labels},
                                   {&out},
                                   {Region{{{0, 2}, {2, 4}}}, Region{{{0, 2}}}},
                                   {Region{{{0, 2}}}},
                                   {Shape{2, 5}, Shape{2}},
                                   {Shape{2}}};
  CpuRegistry().Find({"pick_label_logit", DeviceType::kCpu, DType::kF32})(ctx);
  EXPECT_EQ(Flat(out), (std::vector<double>{11, 0}));
}

TEST(SoftmaxOps, DeclaresSignatures) {
  EXPECT_EQ(SignatureTexts("softmax", {}, {{Shape{4, 5}, DType::kF32}}),
            (std::vector<std::string>{"S(0) -> S(0)", "B -> B"}));
  EXPECT_EQ(SignatureTexts("softmax_grad", {}, {{Shape{4, 5}, DType::kF32}, {Shape{4, 5}}}),
            (std::vector<std::string>{"S(0),S(0) -> S(0)", "B,P -> P", "B,B -> B"}));
  const std::vector<TensorMeta> xent{{Shape{4, 5}, DType::kF32}, {Shape{4}, DType::kI32}};
  EXPECT_EQ(SignatureTexts("sparse_softmax_cross_entropy", {}, xent),
            (std::vector<std::string>{"S(0),S(0) -> S(0)", "B,B -> B"}));
  EXPECT_EQ(SignatureTexts("pick_label_logit", {}, xent),
            (std::vector<std::string>{"S(0),S(0) -> S(0)", "S(1),B -> P", "P,B -> P", "B,B -> B"}));
}

// The class-split construction gives the fused op's loss and logits gradient.
TEST(SoftmaxOps, ClassSplitGraphMatchesTheFusedOp) {
  graph::GraphBuilder builder(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
  const graph::TensorId logits = builder.Input("logits", Shape{3, 5});
  const graph::TensorId labels = builder.Input("labels", Shape{3}, DType::kI64);
  const Attrs all{{"axes", std::vector<int64_t>{0}}};
  graph::TensorId losses[2];
  graph::TensorId grads[2];
  for (bool split : {false, true}) {
    losses[split] = ops::SparseSoftmaxCrossEntropy(builder, logits, labels, split);
    EXPECT_EQ(builder.meta(losses[split]), (TensorMeta{Shape{3}, DType::kF32}));
    const graph::TensorId total = builder.Add1("reduce_sum", {losses[split]}, all);
    grads[split] = graph::AddBackward(builder, total, {logits}).at(logits);
  }
  interpreter::ReferenceInterpreter interp(builder.graph(), CpuRegistry());
  Rng rng(7);
  const auto out = interp.Step({{"logits", Tensor::Random(Shape{3, 5}, DType::kF32, rng)},
                                {"labels", Values(Shape{3}, {4, 0, 2}, DType::kI64)}},
                               {losses[0], losses[1], grads[0], grads[1]});
  EXPECT_LE(CloseRatio(out.at(losses[1]), out.at(losses[0]), 1e-5, 1e-6), 1.0);
  EXPECT_LE(CloseRatio(out.at(grads[1]), out.at(grads[0]), 1e-5, 1e-6), 1.0);
}

TEST(SoftmaxOps, GradientsBuildWithTheRightShapes) {
  graph::GraphBuilder builder(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
  const graph::TensorId x = builder.Input("x", Shape{3, 4});
  const graph::TensorId y = builder.Add1("log_softmax", {builder.Add1("softmax", {x})});
  const graph::TensorId loss =
      builder.Add1("reduce_sum", {y}, Attrs{{"axes", std::vector<int64_t>{0, 1}}});
  const graph::TensorId dx = graph::AddBackward(builder, loss, {x}).at(x);
  EXPECT_EQ(builder.meta(dx), (TensorMeta{Shape{3, 4}, DType::kF32}));
  const graph::OpNode& grad_op = builder.graph().op(builder.graph().tensor(dx).producer);
  EXPECT_EQ(grad_op.type, "softmax_grad");
}

}  // namespace
}  // namespace twinflow::testing
