// fused_attention's edges: the signatures offered per device count, empty heads, a split that
// cuts a head (possible only as an N-D product of head splits), and bad attrs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow::testing {
namespace {

const Attrs kSixHeads{{"heads", int64_t{6}}};

std::vector<graph::TensorMeta> Qkv(Shape shape) {
  return std::vector<graph::TensorMeta>(3, {shape, DType::kF32});
}

bool Has(const std::vector<std::string>& texts, const std::string& text) {
  return std::find(texts.begin(), texts.end(), text) != texts.end();
}

TEST(FusedAttention, HeadsSplitOnlyIntoWholeHeads) {
  const auto two = SignatureTexts("fused_attention", kSixHeads, Qkv(Shape{2, 4, 12}), 2);
  EXPECT_TRUE(Has(two, "S(2),S(2),S(2) -> S(2),S(1)"));
  EXPECT_TRUE(Has(two, "S(1),B,B -> S(1),S(2)"));
  EXPECT_TRUE(Has(two, "B,B,P -> P,B"));
  const auto four = SignatureTexts("fused_attention", kSixHeads, Qkv(Shape{2, 4, 12}), 4);
  EXPECT_FALSE(Has(four, "S(2),S(2),S(2) -> S(2),S(1)"));  // 6 heads do not split 4 ways
}

TEST(FusedAttention, EmptyHeadsGiveTheLogOfTheKeyCount) {
  const Shape shape{1, 3, 0};
  const auto out =
      RunOp("fused_attention", Attrs{{"heads", int64_t{2}}},
            {Tensor(shape, DType::kF32), Tensor(shape, DType::kF32), Tensor(shape, DType::kF32)});
  ASSERT_EQ(out[1].shape(), (Shape{1, 2, 3}));
  // All scores are zero: row i averages i + 1 keys, so its log-sum-exp is log(i + 1).
  for (int64_t i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(out[1].GetDouble(i), std::log(i + 1.0));
}

TEST(FusedAttention, APartThatCutsAHeadIsRefused) {
  // 6 heads of 2 columns; a device holding columns [3, 6) would start inside head 1.
  Rng rng(3);
  const Tensor q = Tensor::Random(Shape{1, 2, 3}, DType::kF32, rng);
  Tensor out(Shape{1, 2, 3}, DType::kF32), lse(Shape{1, 1, 2}, DType::kF32);
  kernels::KernelContext ctx = kernels::WholeTensorContext(kSixHeads, {&q, &q, &q}, {&out, &lse});
  for (size_t i = 0; i < 3; ++i) {
    ctx.input_logical_shapes[i] = Shape{1, 2, 12};
    ctx.input_regions[i] = Region{{{0, 1}, {0, 2}, {3, 6}}};
  }
  try {
    CpuRegistry().Find({"fused_attention", DeviceType::kCpu, DType::kF32})(ctx);
    ADD_FAILURE() << "a part cutting a head ran";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("do not hold whole heads of 2"), std::string::npos)
        << e.what();
  }
}

TEST(FusedAttention, BadHeadsAreRefusedNamingTheAttr) {
  EXPECT_THROW(InferOp("fused_attention", Attrs{{"heads", int64_t{5}}}, Qkv(Shape{1, 2, 12})),
               InvalidArgumentError);
  EXPECT_THROW(InferOp("fused_attention", Attrs{}, Qkv(Shape{1, 2, 12})), InvalidArgumentError);
  EXPECT_THROW(InferOp("fused_attention", kSixHeads, Qkv(Shape{2, 12})), ShapeError);
}

}  // namespace
}  // namespace twinflow::testing
