// NaN and infinity through the CPU kernels, one test per op family, at hand-picked positions:
// what property.NanPropagation cannot see (masks that pass dy * 0, a NaN in either operand of
// a max, infinities) and the finite results the NaN-keeping forms must leave bit-identical
// (relu and relu_grad give +0, never -0, as before).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/tensor.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow::testing {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Attrs Axes(std::vector<int64_t> axes) {
  return Attrs{{"axes", std::move(axes)}, {"keepdims", false}};
}

bool AllNan(const std::vector<double>& values) {
  for (double v : values) {
    if (!std::isnan(v)) return false;
  }
  return true;
}

TEST(NanPropagation, Activations) {
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const Tensor x = Values(Shape{6}, {kNan, -kInf, kInf, -0.0, -2, 3}, dtype);
    const std::vector<double> relu = Flat(RunOp("relu", {}, {x})[0]);
    EXPECT_TRUE(std::isnan(relu[0]));
    EXPECT_EQ(relu[1], 0.0);
    EXPECT_EQ(relu[2], kInf);
    EXPECT_FALSE(std::signbit(relu[3]));  // +0 for -0, as max(x, 0) gave
    EXPECT_FALSE(std::signbit(relu[4]));
    EXPECT_EQ(relu[5], 3.0);
    for (const char* op : {"gelu", "tanh", "exp"}) {
      const std::vector<double> y = Flat(RunOp(op, {}, {x})[0]);
      EXPECT_TRUE(std::isnan(y[0])) << op << " " << DTypeName(dtype);
    }
    EXPECT_EQ(Flat(RunOp("gelu", {}, {x})[0])[2], kInf);
    EXPECT_EQ(Flat(RunOp("tanh", {}, {x})[0])[1], -1.0);
  }
}

TEST(NanPropagation, ActivationGradientsMaskWithDyTimesZero) {
  // relu_grad(dy, y): y > 0 passes dy; elsewhere dy * 0, so a NaN or infinite dy is not masked
  // to 0; a NaN y (the forward was NaN) gives NaN; finite dy gives +0 exactly.
  const Tensor dy = Values(Shape{5}, {kNan, kInf, -1.5, 2, 7});
  const Tensor y = Values(Shape{5}, {0, 0, 0, kNan, 1});
  const std::vector<double> dx = Flat(RunOp("relu_grad", {}, {dy, y})[0]);
  EXPECT_TRUE(std::isnan(dx[0]));
  EXPECT_TRUE(std::isnan(dx[1]));
  EXPECT_EQ(dx[2], 0.0);
  EXPECT_FALSE(std::signbit(dx[2]));
  EXPECT_TRUE(std::isnan(dx[3]));
  EXPECT_EQ(dx[4], 7.0);
  const Tensor x = Values(Shape{2}, {kNan, 1});
  EXPECT_TRUE(std::isnan(Flat(RunOp("gelu_grad", {}, {Values(Shape{2}, {1, 1}), x})[0])[0]));
  EXPECT_TRUE(std::isnan(Flat(RunOp("tanh_grad", {}, {Values(Shape{2}, {kNan, 1}), x})[0])[0]));
}

TEST(NanPropagation, Elementwise) {
  const Tensor a = Values(Shape{2, 2}, {kNan, 1, kInf, 2});
  const Tensor b = Values(Shape{2}, {3, 4});
  for (const char* op : {"add", "sub", "mul", "div"}) {
    const std::vector<double> out = Flat(RunOp(op, {}, {a, b})[0]);
    EXPECT_TRUE(std::isnan(out[0])) << op;
    EXPECT_TRUE(std::isinf(out[2])) << op;
    EXPECT_FALSE(std::isnan(out[1])) << op;
  }
  EXPECT_TRUE(std::isnan(Flat(RunOp("bias_add_grad", {}, {a})[0])[0]));
  EXPECT_TRUE(std::isnan(Flat(RunOp("scalar_mul", Attrs{{"value", 0.0}}, {a})[0])[0]));
  EXPECT_TRUE(std::isnan(Flat(RunOp("scalar_mul", Attrs{{"value", 0.0}}, {a})[0])[2]));  // inf*0
}

TEST(NanPropagation, Matmul) {
  const Tensor a = Values(Shape{2, 2}, {kNan, 1, 2, 3});
  const Tensor b = Values(Shape{2, 2}, {0, 0, 0, 0});  // even times zero
  const std::vector<double> out = Flat(RunOp("matmul", {}, {a, b})[0]);
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));
  EXPECT_EQ(out[2], 0.0);
  EXPECT_EQ(out[3], 0.0);
}

TEST(NanPropagation, ReduceMaxKeepsANanWherever) {
  for (int at = 0; at < 4; ++at) {
    std::vector<double> values = {1, 5, -2, 3};
    values[at] = kNan;
    const Tensor x = Values(Shape{4}, values);
    EXPECT_TRUE(std::isnan(Flat(RunOp("reduce_max", Axes({0}), {x})[0])[0])) << at;
    EXPECT_TRUE(std::isnan(Flat(RunOp("reduce_sum", Axes({0}), {x})[0])[0])) << at;
    EXPECT_TRUE(std::isnan(Flat(RunOp("reduce_mean", Axes({0}), {x})[0])[0])) << at;
  }
  EXPECT_EQ(Flat(RunOp("reduce_max", Axes({0}), {Values(Shape{2}, {-kInf, kInf})})[0])[0], kInf);
  // The gradient: a NaN maximum (or a NaN x) gives NaN; a NaN dy reaches the non-maxima too.
  const Tensor x = Values(Shape{2, 2}, {1, 4, kNan, 2});
  const Tensor y = Values(Shape{2}, {4, kNan});
  const std::vector<double> dx =
      Flat(RunOp("reduce_max_grad", Axes({1}), {x, y, Values(Shape{2}, {kNan, 1})})[0]);
  EXPECT_TRUE(AllNan(dx));
  const std::vector<double> finite = Flat(RunOp(
      "reduce_max_grad", Axes({1}), {x, Values(Shape{2}, {4, 2}), Values(Shape{2}, {3, 1})})[0]);
  EXPECT_EQ(finite[0], 0.0);
  EXPECT_FALSE(std::signbit(finite[0]));
  EXPECT_EQ(finite[1], 3.0);
  EXPECT_TRUE(std::isnan(finite[2]));
}

TEST(NanPropagation, PartialMaxReductionKeepsANanFromEitherSide) {
  // The collectives and boxing reduce partial values with Tensor::ReduceFrom.
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) {
    Tensor a = Values(Shape{2}, {kNan, 1});
    a.ReduceFrom(Values(Shape{2}, {2, kNan}), op);
    EXPECT_TRUE(AllNan(Flat(a)));
    Tensor b = Values(Shape{2}, {-0.0, 3}, DType::kF64);
    b.ReduceFrom(Values(Shape{2}, {0.0, 4}, DType::kF64), op);
    EXPECT_EQ(std::signbit(b.GetDouble(0)), true);  // ties keep the first, as std::max
  }
}

TEST(NanPropagation, SoftmaxAndLosses) {
  const Tensor x = Values(Shape{2, 3}, {1, kNan, 2, 0, 1, 2});
  for (const char* op : {"softmax", "log_softmax"}) {
    const std::vector<double> y = Flat(RunOp(op, Attrs{}, {x})[0]);
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]) && std::isnan(y[2])) << op;
    EXPECT_FALSE(std::isnan(y[3])) << op;
  }
  const Tensor labels = Values(Shape{2}, {0, 1}, DType::kI32);  // row 0's label is not the NaN
  const std::vector<double> loss = Flat(RunOp("sparse_softmax_cross_entropy", {}, {x, labels})[0]);
  EXPECT_TRUE(std::isnan(loss[0]));
  EXPECT_FALSE(std::isnan(loss[1]));
  const std::vector<double> dlogits = Flat(
      RunOp("sparse_softmax_cross_entropy_grad", {}, {x, labels, Values(Shape{2}, {1, 1})})[0]);
  EXPECT_TRUE(std::isnan(dlogits[0]) && std::isnan(dlogits[2]));
}

TEST(NanPropagation, LayerNormSpreadsOverTheRow) {
  const Tensor x = Values(Shape{2, 3}, {1, kNan, 2, 0, 1, 2});
  const Tensor gamma = Values(Shape{3}, {1, 1, 1});
  const Tensor beta = Values(Shape{3}, {0, 0, 0});
  const std::vector<double> y = Flat(RunOp("layer_norm", {}, {x, gamma, beta})[0]);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[2]));
  EXPECT_FALSE(std::isnan(y[3]));
}

TEST(NanPropagation, EmbeddingThroughTheTable) {
  const Tensor table = Values(Shape{3, 2}, {0, 1, kNan, 11, 20, kInf});
  const Tensor ids = Values(Shape{3}, {1, 0, 2}, DType::kI32);
  const std::vector<double> rows = Flat(RunOp("embedding", {}, {table, ids})[0]);
  EXPECT_TRUE(std::isnan(rows[0]));  // the looked-up row carries it
  EXPECT_EQ(rows[2], 0.0);           // a row without it does not
  EXPECT_EQ(rows[5], kInf);
  const Tensor dy = Values(Shape{3, 2}, {kNan, 1, 1, 1, 1, 1});
  const std::vector<double> dw =
      Flat(RunOp("embedding_grad", Attrs{{"num_embeddings", int64_t{3}}}, {dy, ids})[0]);
  EXPECT_TRUE(std::isnan(dw[2]));  // row 1 got the NaN gradient
  EXPECT_FALSE(std::isnan(dw[0]));
}

TEST(NanPropagation, ShapeOpsMoveIt) {
  const Tensor x = Values(Shape{2, 2}, {kNan, 1, 2, 3});
  EXPECT_TRUE(
      std::isnan(Flat(RunOp("transpose", Attrs{{"perm", std::vector<int64_t>{1, 0}}}, {x})[0])[0]));
  EXPECT_TRUE(
      std::isnan(Flat(RunOp("reshape", Attrs{{"shape", std::vector<int64_t>{4}}}, {x})[0])[0]));
}

TEST(NanPropagation, DropoutDropsToXTimesZero) {
  const Tensor x = Values(Shape{64}, std::vector<double>(64, kNan));
  const Attrs attrs{{"rate", 0.5}, {"seed", int64_t{3}}};
  EXPECT_TRUE(AllNan(Flat(RunOp("dropout", attrs, {x})[0])));
  const std::vector<double> finite =
      Flat(RunOp("dropout", attrs, {Values(Shape{64}, std::vector<double>(64, -1))})[0]);
  for (double v : finite) EXPECT_TRUE(v == -2 || (v == 0 && !std::signbit(v))) << v;
}

TEST(NanPropagation, UpdatesCarryANanGradientIntoTheWeights) {
  const Tensor p = Values(Shape{2}, {1, 2});
  const Tensor g = Values(Shape{2}, {kNan, 1});
  const Tensor zeros = Values(Shape{2}, {0, 0});
  const std::vector<double> sgd = Flat(RunOp("sgd_update", Attrs{{"lr", 0.1}}, {p, g})[0]);
  EXPECT_TRUE(std::isnan(sgd[0]));
  EXPECT_FALSE(std::isnan(sgd[1]));
  const auto momentum =
      RunOp("sgd_momentum_update", Attrs{{"lr", 0.1}, {"momentum", 0.9}}, {p, g, zeros});
  EXPECT_TRUE(std::isnan(momentum[0].GetDouble(0)) && std::isnan(momentum[1].GetDouble(0)));
  const auto adam =
      RunOp("adam_update", Attrs{{"lr", 0.1}}, {p, g, zeros, zeros, Values(Shape{}, {0})});
  for (const Tensor& t : adam) EXPECT_TRUE(std::isnan(t.GetDouble(0)));
}

}  // namespace
}  // namespace twinflow::testing
