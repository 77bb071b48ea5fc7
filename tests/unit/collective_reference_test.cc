#include "engine/sbp/collective_reference.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/core/error.h"
#include "engine/core/rng.h"

namespace twinflow::sbp {
namespace {

// A tensor whose element at flat index i is start + i.
Tensor Iota(Shape shape, DType dtype, double start = 0) {
  Tensor t(std::move(shape), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, start + static_cast<double>(i));
  return t;
}

Tensor RowsOf(const Tensor& t, int64_t begin, int64_t end) {
  Region r = Region::Full(t.shape());
  r.ranges[0] = Range{begin, end};
  return t.Slice(r);
}

Tensor ColsOf(const Tensor& t, int64_t begin, int64_t end) {
  Region r = Region::Full(t.shape());
  r.ranges[1] = Range{begin, end};
  return t.Slice(r);
}

TEST(CollectiveReference, AllGatherJoinsUnevenPiecesInMemberOrder) {
  const Tensor whole = Iota(Shape{7, 3}, DType::kI32);
  const std::vector<Tensor> pieces = {RowsOf(whole, 0, 3), RowsOf(whole, 3, 5),
                                      RowsOf(whole, 5, 7)};
  const std::vector<Tensor> out = AllGather(pieces, 0);
  ASSERT_EQ(out.size(), 3u);
  for (const Tensor& t : out) EXPECT_TRUE(BitEqual(t, whole)) << t.ToString();
}

TEST(CollectiveReference, AllGatherAlongInnerAxisWithEmptyPiece) {
  const Tensor whole = Iota(Shape{2, 2}, DType::kF32, 0.5);
  const std::vector<Tensor> pieces = {ColsOf(whole, 0, 1), ColsOf(whole, 1, 2),
                                      ColsOf(whole, 2, 2)};
  for (const Tensor& t : AllGather(pieces, 1)) EXPECT_TRUE(BitEqual(t, whole));
}

TEST(CollectiveReference, AllReduceSumMaxMin) {
  Tensor a(Shape{2, 2}, DType::kI64), b(Shape{2, 2}, DType::kI64), c(Shape{2, 2}, DType::kI64);
  const double av[] = {1, -5, 7, 0}, bv[] = {2, 4, -7, 9}, cv[] = {-3, 6, 1, 2};
  for (int i = 0; i < 4; ++i) {
    a.SetDouble(i, av[i]);
    b.SetDouble(i, bv[i]);
    c.SetDouble(i, cv[i]);
  }
  const std::vector<Tensor> in = {a, b, c};
  const double sum[] = {0, 5, 1, 11}, max[] = {2, 6, 7, 9}, min[] = {-3, -5, -7, 0};
  const std::vector<Tensor> s = AllReduce(in, ReduceOp::kSum);
  const std::vector<Tensor> mx = AllReduce(in, ReduceOp::kMax);
  const std::vector<Tensor> mn = AllReduce(in, ReduceOp::kMin);
  ASSERT_EQ(s.size(), 3u);
  for (int m = 0; m < 3; ++m) {
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(s[m].GetDouble(i), sum[i]);
      EXPECT_EQ(mx[m].GetDouble(i), max[i]);
      EXPECT_EQ(mn[m].GetDouble(i), min[i]);
    }
  }
}

TEST(CollectiveReference, AllReduceFloatSumsInMemberOrder) {
  // (1e8 + 1) + -1e8 in float loses the 1 at the first addition; member order fixes the result.
  std::vector<Tensor> in(3, Tensor(Shape{1}, DType::kF32));
  in[0].SetDouble(0, 1e8);
  in[1].SetDouble(0, 1);
  in[2].SetDouble(0, -1e8);
  const float expected = (1e8f + 1.0f) + -1e8f;
  for (const Tensor& t : AllReduce(in, ReduceOp::kSum)) {
    EXPECT_EQ(t.data<float>()[0], expected);
  }
}

TEST(CollectiveReference, ReduceScatterGivesBalancedPartsOfTheReduction) {
  Rng rng(7);
  std::vector<Tensor> in;
  for (int i = 0; i < 3; ++i) in.push_back(Tensor::Random(Shape{7, 2}, DType::kI32, rng));
  Tensor total = in[0];
  total.ReduceFrom(in[1], ReduceOp::kSum);
  total.ReduceFrom(in[2], ReduceOp::kSum);
  const std::vector<Tensor> out = ReduceScatter(in, ReduceOp::kSum, 0);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(BitEqual(out[0], RowsOf(total, 0, 3)));
  EXPECT_TRUE(BitEqual(out[1], RowsOf(total, 3, 5)));
  EXPECT_TRUE(BitEqual(out[2], RowsOf(total, 5, 7)));
}

TEST(CollectiveReference, ReduceScatterMaxAlongColumns) {
  Rng rng(11);
  std::vector<Tensor> in;
  for (int i = 0; i < 2; ++i) in.push_back(Tensor::Random(Shape{2, 5}, DType::kF64, rng));
  Tensor total = in[0];
  total.ReduceFrom(in[1], ReduceOp::kMax);
  const std::vector<Tensor> out = ReduceScatter(in, ReduceOp::kMax, 1);
  EXPECT_TRUE(BitEqual(out[0], ColsOf(total, 0, 3)));
  EXPECT_TRUE(BitEqual(out[1], ColsOf(total, 3, 5)));
}

TEST(CollectiveReference, AllToAllMovesRowSplitToColumnSplit) {
  // S(0) -> S(1) over three members, both splits uneven: rows 3,2,2 and columns 2,2,1.
  const Tensor whole = Iota(Shape{7, 5}, DType::kI32);
  const std::vector<Tensor> rows = {RowsOf(whole, 0, 3), RowsOf(whole, 3, 5), RowsOf(whole, 5, 7)};
  const std::vector<Tensor> out = AllToAll(rows, /*scatter_axis=*/1, /*gather_axis=*/0);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(BitEqual(out[0], ColsOf(whole, 0, 2)));
  EXPECT_TRUE(BitEqual(out[1], ColsOf(whole, 2, 4)));
  EXPECT_TRUE(BitEqual(out[2], ColsOf(whole, 4, 5)));
  // And back.
  const std::vector<Tensor> back = AllToAll(out, 0, 1);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(BitEqual(back[i], rows[i]));
}

TEST(CollectiveReference, SingleMemberIsIdentity) {
  const Tensor t = Iota(Shape{3, 2}, DType::kF32);
  EXPECT_TRUE(BitEqual(AllGather({t}, 0)[0], t));
  EXPECT_TRUE(BitEqual(AllReduce({t}, ReduceOp::kMin)[0], t));
  EXPECT_TRUE(BitEqual(ReduceScatter({t}, ReduceOp::kSum, 1)[0], t));
  EXPECT_TRUE(BitEqual(AllToAll({t}, 1, 0)[0], t));
}

TEST(CollectiveReference, RejectsBadGroups) {
  const Tensor a = Iota(Shape{2, 3}, DType::kF32);
  const Tensor b = Iota(Shape{2, 4}, DType::kF32);
  const Tensor c = Iota(Shape{2, 3}, DType::kI32);
  const Tensor d = Iota(Shape{6}, DType::kF32);
  EXPECT_THROW(AllGather({}, 0), ShapeError);
  EXPECT_THROW(AllReduce({}, ReduceOp::kSum), ShapeError);
  EXPECT_THROW(AllGather({a, c}, 0), ShapeError);  // dtypes differ
  EXPECT_THROW(AllGather({a, b}, 0), ShapeError);  // axis 1 differs
  EXPECT_NO_THROW(AllGather({a, b}, 1));           // joined axis may differ
  EXPECT_THROW(AllGather({a, d}, 0), ShapeError);  // ranks differ
  EXPECT_THROW(AllGather({a, a}, 2), ShapeError);  // axis out of range
  EXPECT_THROW(AllGather({a, a}, -1), ShapeError);
  EXPECT_THROW(AllReduce({a, b}, ReduceOp::kSum), ShapeError);
  EXPECT_THROW(AllReduce({a, c}, ReduceOp::kMax), ShapeError);
  EXPECT_THROW(ReduceScatter({a, b}, ReduceOp::kSum, 0), ShapeError);
  EXPECT_THROW(ReduceScatter({a, a}, ReduceOp::kSum, 5), ShapeError);
  EXPECT_THROW(AllToAll({a, b}, 0, 0), ShapeError);  // scatter axis 1 differs
  EXPECT_THROW(AllToAll({a, a}, 0, 3), ShapeError);
  try {
    AllReduce({a, b}, ReduceOp::kSum);
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("member 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[2,4]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace twinflow::sbp
