#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/graph/graph_builder.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow {
namespace {

using graph::OpContext;
using graph::TensorMeta;

using testing::BuiltinRegistry;
using testing::CpuRegistry;
using testing::InferOp;
using testing::Values;

Tensor RunOp(const std::string& type, const Attrs& attrs, const std::vector<Tensor>& inputs,
             Shape out_shape) {
  Tensor out(std::move(out_shape), inputs[0].dtype());
  std::vector<const Tensor*> in;
  for (const Tensor& t : inputs) in.push_back(&t);
  CpuRegistry().Find({type, DeviceType::kCpu, inputs[0].dtype()})(
      kernels::WholeTensorContext(attrs, in, {&out}));
  return out;
}

// A stored [rows, cols] matrix read as its logical operand (transposed when t).
double At(const Tensor& m, int64_t i, int64_t j, bool t) {
  const int64_t cols = m.shape()[1];
  return t ? m.GetDouble(j * cols + i) : m.GetDouble(i * cols + j);
}

TEST(MatmulOps, InfersShapesWithTransposes) {
  const TensorMeta a{Shape{3, 4}, DType::kF32};
  const TensorMeta b{Shape{5, 4}, DType::kF32};
  EXPECT_EQ(InferOp("matmul", {{"transpose_b", true}}, {a, b})[0].shape, (Shape{3, 5}));
  EXPECT_EQ(InferOp("matmul", {{"transpose_a", true}}, {a, {Shape{3, 2}, DType::kF32}})[0].shape,
            (Shape{4, 2}));
  EXPECT_EQ(InferOp("batch_matmul", {},
                    {{Shape{2, 3, 3, 4}, DType::kF64}, {Shape{2, 3, 4, 6}, DType::kF64}})[0],
            (TensorMeta{Shape{2, 3, 3, 6}, DType::kF64}));
}

TEST(MatmulOps, RejectsBadInputsNamingTheOp) {
  const TensorMeta a{Shape{3, 4}, DType::kF32};
  EXPECT_THROW(InferOp("matmul", {}, {a, a}), ShapeError);
  EXPECT_THROW(InferOp("matmul", {}, {a, {Shape{4}, DType::kF32}}), ShapeError);
  EXPECT_THROW(InferOp("matmul", {}, {a, {Shape{4, 2}, DType::kF64}}), InvalidArgumentError);
  EXPECT_THROW(InferOp("matmul", {}, {{Shape{3, 4}, DType::kI32}, {Shape{4, 2}, DType::kI32}}),
               InvalidArgumentError);
  EXPECT_THROW(InferOp("matmul", {{"transpose_a", int64_t{1}}}, {a, a}), InvalidArgumentError);
  EXPECT_THROW(InferOp("batch_matmul", {}, {a, {Shape{4, 2}, DType::kF32}}), ShapeError);
  EXPECT_THROW(
      InferOp("batch_matmul", {}, {{Shape{2, 3, 4}, DType::kF32}, {Shape{3, 4, 2}, DType::kF32}}),
      ShapeError);
  try {
    InferOp("matmul", {}, {a, a});
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
  }
}

TEST(MatmulOps, KernelComputesAHandProduct) {
  const Tensor a = Values({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Values({3, 2}, {7, 8, 9, 10, 11, 12});
  const Tensor c = RunOp("matmul", {}, {a, b}, {2, 2});
  EXPECT_TRUE(BitEqual(c, Values({2, 2}, {58, 64, 139, 154})));
}

TEST(MatmulOps, KernelHonoursEveryTransposeCombination) {
  Rng rng(7);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (DType dtype : {DType::kF32, DType::kF64}) {
        const int64_t m = 3, k = 5, n = 2;
        const Tensor a = Tensor::Random(ta ? Shape{k, m} : Shape{m, k}, dtype, rng);
        const Tensor b = Tensor::Random(tb ? Shape{n, k} : Shape{k, n}, dtype, rng);
        const Tensor c =
            RunOp("matmul", {{"transpose_a", ta}, {"transpose_b", tb}}, {a, b}, Shape{m, n});
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double want = 0;
            for (int64_t p = 0; p < k; ++p) want += At(a, i, p, ta) * At(b, p, j, tb);
            EXPECT_NEAR(c.GetDouble(i * n + j), want, 1e-5);
          }
        }
      }
    }
  }
}

TEST(MatmulOps, BatchKernelMultipliesEachBatch) {
  const Tensor a = Values({2, 1, 2}, {1, 2, 3, 4});
  const Tensor b = Values({2, 2, 1}, {5, 6, 7, 8});
  EXPECT_TRUE(BitEqual(RunOp("batch_matmul", {}, {a, b}, {2, 1, 1}), Values({2, 1, 1}, {17, 53})));
}

TEST(MatmulOps, KernelHandlesEmptyContractionAndRejectsBadShapes) {
  Tensor c = RunOp("matmul", {},
                   {Tensor(Shape{2, 0}, DType::kF32), Tensor(Shape{0, 3}, DType::kF32)}, {2, 3});
  EXPECT_TRUE(BitEqual(c, Tensor(Shape{2, 3}, DType::kF32)));
  EXPECT_THROW(RunOp("matmul", {},
                     {Tensor(Shape{2, 3}, DType::kF32), Tensor(Shape{2, 3}, DType::kF32)}, {2, 3}),
               ShapeError);
  EXPECT_THROW(RunOp("matmul", {},
                     {Tensor(Shape{2, 3}, DType::kF32), Tensor(Shape{3, 4}, DType::kF32)}, {2, 5}),
               ShapeError);
}

TEST(MatmulOps, DeclaresTheMegatronSignatures) {
  const std::vector<TensorMeta> inputs = {{Shape{4, 6}, DType::kF32}, {Shape{5, 6}, DType::kF32}};
  const Attrs attrs{{"transpose_b", true}};
  const auto sigs =
      BuiltinRegistry().Find("matmul").signatures(OpContext{"matmul", attrs, inputs}, 2);
  std::vector<std::string> texts;
  for (const auto& s : sigs) texts.push_back(s.ToString());
  EXPECT_EQ(texts, (std::vector<std::string>{"S(0),B -> S(0)", "B,S(0) -> S(1)", "S(1),S(1) -> P",
                                             "P,B -> P", "B,P -> P", "B,B -> B"}))
      << ::testing::PrintToString(texts);
  const std::vector<TensorMeta> batched = {{Shape{2, 4, 6}, DType::kF32},
                                           {Shape{2, 6, 5}, DType::kF32}};
  const auto bsigs =
      BuiltinRegistry().Find("batch_matmul").signatures(OpContext{"batch_matmul", {}, batched}, 2);
  EXPECT_EQ(bsigs[0].ToString(), "S(0),S(0) -> S(0)");
  EXPECT_EQ(bsigs.size(), 7u);
}

TEST(MatmulOps, CostIsTwoMnk) {
  const std::vector<TensorMeta> inputs = {{Shape{3, 4}, DType::kF32}, {Shape{4, 5}, DType::kF32}};
  const graph::OpCost cost = BuiltinRegistry().Find("matmul").cost(OpContext{"matmul", {}, inputs});
  EXPECT_EQ(cost.flops, 2.0 * 3 * 4 * 5);
  EXPECT_EQ(cost.bytes_read, (12 + 20) * 4);
  EXPECT_EQ(cost.bytes_written, 15 * 4);
}

TEST(MatmulOps, GradientOpsHaveTheInputShapes) {
  for (const std::string type : {"matmul", "batch_matmul"}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        graph::GraphBuilder builder(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
        const bool batched = type == "batch_matmul";
        std::vector<int64_t> a_dims = ta ? std::vector<int64_t>{5, 3} : std::vector<int64_t>{3, 5};
        std::vector<int64_t> b_dims = tb ? std::vector<int64_t>{2, 5} : std::vector<int64_t>{5, 2};
        if (batched) {
          a_dims.insert(a_dims.begin(), 4);
          b_dims.insert(b_dims.begin(), 4);
        }
        const auto a = builder.Input("a", Shape(a_dims));
        const auto b = builder.Input("b", Shape(b_dims));
        const auto y = builder.Add1(type, {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}});
        const auto dy = builder.Input("dy", builder.meta(y).shape);
        const graph::OpNode& node = builder.graph().op(builder.graph().tensor(y).producer);
        const auto grads = BuiltinRegistry().Find(type).gradient(builder, node, {dy});
        ASSERT_EQ(grads.size(), 2u);
        EXPECT_EQ(builder.meta(*grads[0]).shape, Shape(a_dims)) << type << ta << tb;
        EXPECT_EQ(builder.meta(*grads[1]).shape, Shape(b_dims)) << type << ta << tb;
      }
    }
  }
}

}  // namespace
}  // namespace twinflow
