// engine/core: dtypes, 16-bit float conversions, shapes, regions, tensors and the rng.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/core/region.h"
#include "engine/core/rng.h"
#include "engine/core/shape.h"
#include "engine/core/tensor.h"

namespace twinflow {
namespace {

// A tensor holding 0, 1, 2, ... in row-major order.
Tensor Iota(Shape shape, DType dtype) {
  Tensor t(std::move(shape), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, static_cast<double>(i));
  return t;
}

TEST(DTypeTest, NamesSizesAndKinds) {
  EXPECT_STREQ(DTypeName(DType::kF32), "f32");
  EXPECT_STREQ(DTypeName(DType::kBF16), "bf16");
  EXPECT_EQ(DTypeSize(DType::kF32), 4);
  EXPECT_EQ(DTypeSize(DType::kF64), 8);
  EXPECT_EQ(DTypeSize(DType::kI32), 4);
  EXPECT_EQ(DTypeSize(DType::kI64), 8);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2);
  EXPECT_EQ(DTypeSize(DType::kF16), 2);
  EXPECT_TRUE(IsFloating(DType::kBF16));
  EXPECT_FALSE(IsFloating(DType::kI64));
  EXPECT_TRUE(IsStorageOnly(DType::kF16));
  EXPECT_FALSE(IsStorageOnly(DType::kF32));
}

TEST(DTypeTest, ParseRoundTripsAndAliases) {
  for (DType d : kAllDTypes) EXPECT_EQ(ParseDType(DTypeName(d)), d);
  EXPECT_EQ(ParseDType("float32"), DType::kF32);
  EXPECT_EQ(ParseDType("half"), DType::kF16);
  EXPECT_EQ(ParseDType("bfloat16"), DType::kBF16);
}

TEST(DTypeTest, ParseRejectsUnknownNames) {
  EXPECT_THROW(ParseDType("f8"), InvalidArgumentError);
  EXPECT_THROW(ParseDType(""), InvalidArgumentError);
  try {
    ParseDType("int7");
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("int7"), std::string::npos) << e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  }
}

TEST(DTypeTest, BF16ExactValuesAndRounding) {
  EXPECT_EQ(FloatToBF16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBF16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToBF16(0.5f), 0x3F00);
  EXPECT_EQ(FloatToBF16(0.0f), 0x0000);
  EXPECT_EQ(BF16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(BF16ToFloat(0xC040), -3.0f);
  // Ties go to the even mantissa.
  EXPECT_EQ(FloatToBF16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(FloatToBF16(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_TRUE(std::isnan(BF16ToFloat(FloatToBF16(std::nanf("")))));
  EXPECT_EQ(BF16ToFloat(FloatToBF16(std::numeric_limits<float>::infinity())),
            std::numeric_limits<float>::infinity());
}

TEST(DTypeTest, F16ExactValuesAndRounding) {
  EXPECT_EQ(FloatToF16(1.0f), 0x3C00);
  EXPECT_EQ(FloatToF16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToF16(0.5f), 0x3800);
  EXPECT_EQ(FloatToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToF16(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToF16(1e6f), 0x7C00);      // overflows to inf
  EXPECT_EQ(FloatToF16(1.0f + 0x1p-11f), 0x3C00);
  EXPECT_EQ(FloatToF16(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(F16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(F16ToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(F16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(F16ToFloat(0xC000), -2.0f);
  EXPECT_EQ(F16ToFloat(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(F16ToFloat(FloatToF16(std::nanf("")))));
}

TEST(ShapeTest, ParsePrintAndStrides) {
  EXPECT_EQ(ParseShape("7,5"), (Shape{7, 5}));
  EXPECT_EQ(ParseShape("[7, 5]"), (Shape{7, 5}));
  EXPECT_EQ(ParseShape("(2,3,4)"), (Shape{2, 3, 4}));
  EXPECT_EQ(ParseShape("[]").rank(), 0);
  EXPECT_EQ(ParseShape("[]").numel(), 1);
  EXPECT_EQ(ParseShape("[3,0]").numel(), 0);
  EXPECT_EQ((Shape{7, 5}).ToString(), "[7,5]");
  EXPECT_EQ(ParseShape(Shape{4, 1, 9}.ToString()), (Shape{4, 1, 9}));
  EXPECT_EQ((Shape{2, 3, 4}).Strides(), (std::vector<int64_t>{12, 4, 1}));
}

TEST(ShapeTest, Errors) {
  for (const char* bad : {"7,-1", "a", "7,,5", "[7,5", "7.5", "99999999999999999999"}) {
    EXPECT_THROW(ParseShape(bad), ShapeError) << bad;
  }
  EXPECT_THROW(Shape({3, -1}), ShapeError);
  try {
    ParseShape("4,x");
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("4,x"), std::string::npos) << e.what();
  }
}

TEST(RegionTest, BalancedParts) {
  EXPECT_EQ(BalancedPart({0, 7}, 3, 0), (Range{0, 3}));
  EXPECT_EQ(BalancedPart({0, 7}, 3, 1), (Range{3, 5}));
  EXPECT_EQ(BalancedPart({0, 7}, 3, 2), (Range{5, 7}));
  EXPECT_EQ(BalancedPart({0, 2}, 4, 1), (Range{1, 2}));
  EXPECT_EQ(BalancedPart({0, 2}, 4, 2), (Range{2, 2}));
  EXPECT_EQ(BalancedPart({0, 2}, 4, 3), (Range{2, 2}));
  EXPECT_EQ(BalancedPart({10, 15}, 2, 1), (Range{13, 15}));
}

TEST(RegionTest, Operations) {
  const Region full = Region::Full(Shape{4, 6});
  EXPECT_EQ(full.ToString(), "[0:4,0:6]");
  EXPECT_EQ(full.numel(), 24);
  const Region a{{{1, 3}, {2, 6}}};
  const Region b{{{2, 4}, {0, 3}}};
  EXPECT_EQ(a.shape(), (Shape{2, 4}));
  EXPECT_TRUE(full.Contains(a));
  EXPECT_FALSE(a.Contains(full));
  EXPECT_EQ(a.Intersect(b), (Region{{{2, 3}, {2, 3}}}));
  const Region disjoint = a.Intersect(Region{{{0, 1}, {0, 6}}});
  EXPECT_TRUE(disjoint.empty());
  EXPECT_EQ(disjoint.numel(), 0);
  EXPECT_TRUE(a.Contains(disjoint));  // every index of an empty region lies anywhere
  EXPECT_EQ(a.RelativeTo(Region{{{1, 4}, {2, 6}}}), (Region{{{0, 2}, {0, 4}}}));
}

TEST(TensorTest, ZeroFilledAndSlice) {
  Tensor z(Shape{2, 3}, DType::kF32);
  EXPECT_EQ(z.numel(), 6);
  EXPECT_EQ(z.nbytes(), 24);
  for (int64_t i = 0; i < z.numel(); ++i) EXPECT_EQ(z.GetDouble(i), 0.0);

  const Tensor t = Iota(Shape{3, 4}, DType::kI32);
  const Tensor s = t.Slice(Region{{{1, 3}, {1, 3}}});
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.GetDouble(0), 5);
  EXPECT_EQ(s.GetDouble(1), 6);
  EXPECT_EQ(s.GetDouble(2), 9);
  EXPECT_EQ(s.GetDouble(3), 10);
  EXPECT_EQ(t.Slice(Region{{{1, 1}, {0, 4}}}).numel(), 0);
  EXPECT_TRUE(BitEqual(t.Slice(Region::Full(t.shape())), t));
}

TEST(TensorTest, CopyRegionFrom) {
  const Tensor src = Iota(Shape{2, 3, 4}, DType::kF64);
  Tensor dst(Shape{1, 3, 3}, DType::kF64);
  // src[1, 0:3, 2:3] (values 14, 18, 22) into dst column 1.
  dst.CopyRegionFrom(src, Region{{{1, 2}, {0, 3}, {2, 3}}}, Region{{{0, 1}, {0, 3}, {1, 2}}});
  EXPECT_EQ(dst.GetDouble(1), 14);
  EXPECT_EQ(dst.GetDouble(4), 18);
  EXPECT_EQ(dst.GetDouble(7), 22);
  EXPECT_EQ(dst.GetDouble(0), 0);
  EXPECT_EQ(dst.GetDouble(8), 0);
  // Shapes differ, ranks differ, out of bounds, dtype differs.
  EXPECT_THROW(
      dst.CopyRegionFrom(src, Region{{{0, 1}, {0, 2}, {0, 2}}}, Region{{{0, 1}, {0, 1}, {0, 2}}}),
      ShapeError);
  EXPECT_THROW(dst.CopyRegionFrom(src, Region{{{0, 1}, {0, 3}, {2, 3}}}, Region{{{0, 3}, {1, 2}}}),
               ShapeError);
  EXPECT_THROW(
      dst.CopyRegionFrom(src, Region{{{0, 1}, {0, 1}, {0, 4}}}, Region{{{0, 1}, {0, 1}, {0, 4}}}),
      ShapeError);
  const Tensor other = Iota(Shape{1, 3, 3}, DType::kF32);
  EXPECT_THROW(dst.CopyRegionFrom(other, Region::Full(other.shape()), Region::Full(dst.shape())),
               ShapeError);
}

TEST(TensorTest, ReduceFrom) {
  Tensor a(Shape{3}, DType::kI32), b(Shape{3}, DType::kI32);
  for (int i = 0; i < 3; ++i) {
    a.SetDouble(i, i - 1);  // -1, 0, 1
    b.SetDouble(i, 1 - i);  // 1, 0, -1
  }
  Tensor sum = a, max = a, min = a;
  sum.ReduceFrom(b, ReduceOp::kSum);
  max.ReduceFrom(b, ReduceOp::kMax);
  min.ReduceFrom(b, ReduceOp::kMin);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sum.GetDouble(i), 0);
    EXPECT_EQ(max.GetDouble(i), std::abs(i - 1));
    EXPECT_EQ(min.GetDouble(i), -std::abs(i - 1));
  }
  Tensor h(Shape{2}, DType::kBF16), g(Shape{2}, DType::kBF16);
  h.Fill(1.5);
  g.Fill(2.25);
  h.ReduceFrom(g, ReduceOp::kSum);
  EXPECT_EQ(h.GetDouble(0), 3.75);
  EXPECT_THROW(a.ReduceFrom(Tensor(Shape{4}, DType::kI32), ReduceOp::kSum), ShapeError);
  EXPECT_THROW(a.ReduceFrom(Tensor(Shape{3}, DType::kI64), ReduceOp::kSum), ShapeError);
}

TEST(TensorTest, FillIdentity) {
  Tensor i(Shape{2}, DType::kI32);
  i.FillIdentity(ReduceOp::kMax);
  EXPECT_EQ(i.data<int32_t>()[1], std::numeric_limits<int32_t>::lowest());
  i.FillIdentity(ReduceOp::kMin);
  EXPECT_EQ(i.data<int32_t>()[0], std::numeric_limits<int32_t>::max());
  i.FillIdentity(ReduceOp::kSum);
  EXPECT_EQ(i.GetDouble(0), 0);
  Tensor l(Shape{1}, DType::kI64);
  l.FillIdentity(ReduceOp::kMax);
  EXPECT_EQ(l.data<int64_t>()[0], std::numeric_limits<int64_t>::lowest());
  for (DType d : {DType::kF32, DType::kF64, DType::kBF16, DType::kF16}) {
    Tensor f(Shape{2}, d);
    f.FillIdentity(ReduceOp::kMax);
    EXPECT_EQ(f.GetDouble(1), -std::numeric_limits<double>::infinity()) << DTypeName(d);
    f.FillIdentity(ReduceOp::kMin);
    EXPECT_EQ(f.GetDouble(0), std::numeric_limits<double>::infinity()) << DTypeName(d);
    // The identity really is neutral.
    Tensor v(Shape{2}, d);
    v.Fill(-0.75);
    f.ReduceFrom(v, ReduceOp::kMin);
    EXPECT_EQ(f.GetDouble(0), -0.75);
  }
}

TEST(TensorTest, CloseRatioAndBitEqual) {
  Tensor a(Shape{2}, DType::kF64), b(Shape{2}, DType::kF64);
  a.Fill(1.0);
  b.Fill(1.0);
  EXPECT_EQ(CloseRatio(a, b, 1e-3, 0), 0.0);
  EXPECT_TRUE(BitEqual(a, b));
  a.SetDouble(1, 1.001);
  EXPECT_FALSE(BitEqual(a, b));
  EXPECT_NEAR(CloseRatio(a, b, 1e-3, 0), 1.0, 1e-6);
  EXPECT_GT(CloseRatio(a, b, 1e-4, 0), 1.0);
  EXPECT_LT(CloseRatio(a, b, 0, 0.01), 1.0);
  EXPECT_TRUE(std::isinf(CloseRatio(a, Tensor(Shape{3}, DType::kF64), 1, 1)));
  EXPECT_TRUE(std::isinf(CloseRatio(a, Tensor(Shape{2}, DType::kF32), 1, 1)));
  a.SetDouble(0, std::nan(""));
  EXPECT_TRUE(std::isinf(CloseRatio(a, b, 1, 1)));
}

TEST(TensorTest, RandomIsDeterministicAndInRange) {
  Rng r1(7), r2(7);
  const Tensor a = Tensor::Random(Shape{50}, DType::kI64, r1);
  EXPECT_TRUE(BitEqual(a, Tensor::Random(Shape{50}, DType::kI64, r2)));
  for (int64_t i = 0; i < a.numel(); ++i) {
    EXPECT_GE(a.GetDouble(i), -100);
    EXPECT_LE(a.GetDouble(i), 100);
  }
  const Tensor f = Tensor::Random(Shape{50}, DType::kF32, r1);
  for (int64_t i = 0; i < f.numel(); ++i) {
    EXPECT_GE(f.GetDouble(i), -1);
    EXPECT_LT(f.GetDouble(i), 1);
  }
}

TEST(RngTest, SameSeedSameSequence) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.NextU64();
    EXPECT_EQ(x, b.NextU64());
    differs = differs || x != c.NextU64();
  }
  EXPECT_TRUE(differs);
  Rng f1 = Rng(5).Fork(1), f2 = Rng(5).Fork(1), f3 = Rng(5).Fork(2);
  const uint64_t x = f1.NextU64();
  EXPECT_EQ(x, f2.NextU64());
  EXPECT_NE(x, f3.NextU64());
}

TEST(RngTest, UniformBounds) {
  Rng rng(1);
  std::set<int64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const int64_t v = rng.UniformInt(-3, 3);
    EXPECT_GE(v, -3);
    EXPECT_LE(v, 3);
    seen.insert(v);
    const double u = rng.Uniform(2.0, 2.5);
    EXPECT_GE(u, 2.0);
    EXPECT_LT(u, 2.5);
  }
  EXPECT_EQ(seen.size(), 7u);  // both ends inclusive
  EXPECT_EQ(rng.UniformInt(9, 9), 9);
}

TEST(ErrorTest, KindAndMessage) {
  const SbpError e("bad S(9)");
  EXPECT_EQ(e.kind(), ErrorKind::kSbp);
  EXPECT_NE(std::string(e.what()).find("bad S(9)"), std::string::npos);
  EXPECT_STREQ(ErrorKindName(ErrorKind::kShape), "Shape");
  const Error& base = e;
  EXPECT_EQ(base.kind(), ErrorKind::kSbp);
}

}  // namespace
}  // namespace twinflow
