// embedding and embedding_grad: inference errors, lookups and scatter-adds by hand, the
// vocabulary-split slices, declared signatures, and the weight gradient autograd builds.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/graph/autograd.h"
#include "engine/interpreter/reference_interpreter.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow::testing {
namespace {

using graph::TensorMeta;

const TensorMeta kWeight{Shape{5, 3}, DType::kF32};

TEST(EmbeddingOps, InfersAndRejects) {
  EXPECT_EQ(InferOp("embedding", {}, {kWeight, {Shape{2, 4}, DType::kI64}})[0],
            (TensorMeta{Shape{2, 4, 3}, DType::kF32}));
  EXPECT_THROW(InferOp("embedding", {}, {{Shape{5}, DType::kF32}, {Shape{4}, DType::kI32}}),
               ShapeError);
  EXPECT_THROW(InferOp("embedding", {}, {kWeight, {Shape{4}, DType::kF32}}), InvalidArgumentError);
  EXPECT_THROW(InferOp("embedding_grad", Attrs{{"num_embeddings", int64_t{5}}},
                       {{Shape{4, 3}, DType::kF32}, {Shape{3}, DType::kI32}}),
               ShapeError);
  EXPECT_THROW(InferOp("embedding_grad", {}, {{Shape{4, 3}, DType::kF32}, {Shape{4}, DType::kI32}}),
               InvalidArgumentError);  // num_embeddings missing
}

TEST(EmbeddingOps, LooksUpAndScattersRows) {
  const Tensor weight = Values(Shape{3, 2}, {0, 1, 10, 11, 20, 21});
  const Tensor ids = Values(Shape{3}, {2, 0, 2}, DType::kI32);
  EXPECT_EQ(Flat(RunOp("embedding", {}, {weight, ids})[0]),
            (std::vector<double>{20, 21, 0, 1, 20, 21}));
  const Tensor dy = Values(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(Flat(RunOp("embedding_grad", Attrs{{"num_embeddings", int64_t{3}}}, {dy, ids})[0]),
            (std::vector<double>{3, 4, 0, 0, 6, 8}));
  EXPECT_THROW(RunOp("embedding", {}, {weight, Values(Shape{1}, {3}, DType::kI64)}),
               InvalidArgumentError);
}

// A device holding vocabulary rows [1, 3) of 3: zeros for ids it does not own, and in the
// gradient only its own rows.
TEST(EmbeddingOps, VocabularySplitUsesTheRowRange) {
  const Tensor weight = Values(Shape{2, 2}, {10, 11, 20, 21});
  const Tensor ids = Values(Shape{3}, {2, 0, 1}, DType::kI64);
  Tensor out(Shape{3, 2}, DType::kF32);
  const Attrs none;
  const kernels::KernelContext ctx{none,
                                   {&weight, &ids},
                                   {&out},
                                   {Region{{{1, 3}, {0, 2}}}, Region{{{0, 3}}}},
                                   {Region::Full(out.shape())},
                                   {Shape{3, 2}, Shape{3}},
                                   {Shape{3, 2}}};
  CpuRegistry().Find({"embedding", DeviceType::kCpu, DType::kF32})(ctx);
  EXPECT_EQ(Flat(out), (std::vector<double>{20, 21, 0, 0, 10, 11}));

  const Attrs attrs{{"num_embeddings", int64_t{3}}};
  const Tensor dy = Values(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor dweight(Shape{2, 2}, DType::kF32);
  const kernels::KernelContext grad_ctx{attrs,
                                        {&dy, &ids},
                                        {&dweight},
                                        {Region::Full(dy.shape()), Region::Full(ids.shape())},
                                        {Region{{{1, 3}, {0, 2}}}},
                                        {Shape{3, 2}, Shape{3}},
                                        {Shape{3, 2}}};
  CpuRegistry().Find({"embedding_grad", DeviceType::kCpu, DType::kF32})(grad_ctx);
  EXPECT_EQ(Flat(dweight), (std::vector<double>{5, 6, 1, 2}));
}

TEST(EmbeddingOps, DeclaresSignatures) {
  EXPECT_EQ(SignatureTexts("embedding", {}, {kWeight, {Shape{4}, DType::kI32}}),
            (std::vector<std::string>{"B,S(0) -> S(0)", "S(1),B -> S(1)", "S(0),B -> P", "P,B -> P",
                                      "B,B -> B"}));
  EXPECT_EQ(SignatureTexts("embedding_grad", Attrs{{"num_embeddings", int64_t{5}}},
                           {{Shape{4, 3}, DType::kF32}, {Shape{4}, DType::kI32}}),
            (std::vector<std::string>{"S(0),S(0) -> P", "S(1),B -> S(1)", "B,B -> S(0)", "P,B -> P",
                                      "B,B -> B"}));
}

TEST(EmbeddingOps, WeightGradientCountsLookups) {
  graph::GraphBuilder builder(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
  const graph::TensorId weight = builder.Input("weight", Shape{4, 2});
  const graph::TensorId ids = builder.Input("ids", Shape{2, 2}, DType::kI32);
  const graph::TensorId out = builder.Add1("embedding", {weight, ids});
  const graph::TensorId loss =
      builder.Add1("reduce_sum", {out}, Attrs{{"axes", std::vector<int64_t>{0, 1, 2}}});
  const graph::TensorId dw = graph::AddBackward(builder, loss, {weight}).at(weight);
  EXPECT_EQ(builder.meta(dw), (TensorMeta{Shape{4, 2}, DType::kF32}));
  interpreter::ReferenceInterpreter interp(builder.graph(), CpuRegistry());
  const auto got = interp.Step({{"weight", Tensor(Shape{4, 2}, DType::kF32)},
                                {"ids", Values(Shape{2, 2}, {3, 1, 3, 3}, DType::kI32)}},
                               {dw});
  EXPECT_EQ(Flat(got.at(dw)), (std::vector<double>{0, 0, 1, 1, 0, 0, 3, 3}));
}

}  // namespace
}  // namespace twinflow::testing
