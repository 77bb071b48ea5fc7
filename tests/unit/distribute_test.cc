// Reference Distribute / Assemble: round trips for every Sbp kind and dtype, random asymmetric
// partial decompositions, and rejection of inconsistent physical tensors.
#include "engine/sbp/distribute.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/sbp/slicing.h"

namespace twinflow::sbp {
namespace {

// Partial sums of floats are only approximately exact; the tolerance follows the storage type.
double SumTolerance(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return 1e-12;
    case DType::kF32:
      return 1e-5;
    case DType::kF16:
      return 1e-2;
    case DType::kBF16:
      return 1e-1;
    default:
      return 0;
  }
}

bool HasPartialSum(const Layout& layout) {
  for (const Sbp& s : layout.nd_sbp.sbps()) {
    if (s.is_partial() && s.op == ReduceOp::kSum) return true;
  }
  return false;
}

std::string SbpMessage(const std::vector<Tensor>& physical, const Shape& shape,
                       const Layout& layout) {
  try {
    Assemble(physical, shape, layout);
  } catch (const SbpError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an SbpError";
  return "";
}

std::string ShapeMessage(const std::vector<Tensor>& physical, const Shape& shape,
                         const Layout& layout) {
  try {
    Assemble(physical, shape, layout);
  } catch (const ShapeError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ShapeError";
  return "";
}

const char* const kLayouts[] = {"cpu:0-3 S(0)",
                                "cpu:0-3 S(1)",
                                "cpu:0-2 B",
                                "cpu:0-3 P",
                                "cpu:0-3 P(max)",
                                "cpu:0-3 P(min)",
                                "cpu:0-3 [2,2] (S(0),B)",
                                "cpu:0-3 [2,2] (P,S(1))",
                                "cpu:0-3 [2,2] (B,P(max))",
                                "cpu:0-5 [3,2] (S(1),P(min))",
                                "cpu:0-3 [2,2] (P,P)",
                                "cpu:0-3 [2,2] (S(0),S(0))",
                                "cuda:2,5,7-11 [7] P",
                                "cpu:0-7 [2,2,2] (S(0),P,B)",
                                "cpu:0-7 [2,2,2] (P(max),S(1),P)"};

TEST(DistributeTest, RoundTripEveryKindAndDType) {
  Rng rng(2024);
  const Shape shape{7, 5};
  for (DType dtype : kAllDTypes) {
    const Tensor logical = Tensor::Random(shape, dtype, rng);
    for (const char* text : kLayouts) {
      const Layout layout = ParseLayout(text);
      const std::vector<Tensor> physical = Distribute(logical, layout, rng);
      ASSERT_EQ(static_cast<int64_t>(physical.size()), layout.placement.size()) << text;
      for (int64_t i = 0; i < layout.placement.size(); ++i) {
        EXPECT_EQ(physical[i].shape(), PhysicalShape(shape, layout, i)) << text << " " << i;
        EXPECT_EQ(physical[i].dtype(), dtype);
      }
      const Tensor back = Assemble(physical, shape, layout);
      if (IsFloating(dtype) && HasPartialSum(layout)) {
        const double tol = SumTolerance(dtype);
        EXPECT_LE(CloseRatio(back, logical, tol, tol), 1.0) << text << " " << DTypeName(dtype);
      } else {
        EXPECT_TRUE(BitEqual(back, logical)) << text << " " << DTypeName(dtype);
      }
    }
  }
}

TEST(DistributeTest, SplitsHoldTheirSlices) {
  Rng rng(3);
  const Tensor logical = Tensor::Random(Shape{7, 5}, DType::kF32, rng);
  const Layout layout = ParseLayout("cpu:0-3 [2,2] (S(1),S(0))");
  const std::vector<Tensor> physical = Distribute(logical, layout, rng);
  const std::vector<Region> regions = PhysicalRegions(logical.shape(), layout);
  for (size_t i = 0; i < physical.size(); ++i) {
    EXPECT_TRUE(BitEqual(physical[i], logical.Slice(regions[i]))) << i;
  }
}

TEST(DistributeTest, BroadcastReplicasAreIdentical) {
  Rng rng(4);
  const Tensor logical = Tensor::Random(Shape{3, 4}, DType::kF64, rng);
  // Along the B axis, devices (0,j) and (1,j) hold the same partial value.
  const Layout layout = ParseLayout("cpu:0-5 [2,3] (B,P)");
  const std::vector<Tensor> physical = Distribute(logical, layout, rng);
  for (int j = 0; j < 3; ++j) EXPECT_TRUE(BitEqual(physical[j], physical[3 + j])) << j;
  EXPECT_FALSE(BitEqual(physical[0], physical[1]));
}

TEST(DistributeTest, ExtremeIntegersRoundTripExactly) {
  const Shape shape{6};
  for (DType dtype : {DType::kI32, DType::kI64}) {
    Tensor logical(shape, dtype);
    if (dtype == DType::kI32) {
      const int32_t values[] = {std::numeric_limits<int32_t>::max(),
                                std::numeric_limits<int32_t>::lowest(),
                                0,
                                -1,
                                1 << 30,
                                -(1 << 30)};
      for (int i = 0; i < 6; ++i) logical.data<int32_t>()[i] = values[i];
    } else {
      const int64_t values[] = {std::numeric_limits<int64_t>::max(),
                                std::numeric_limits<int64_t>::lowest(),
                                (int64_t{1} << 53) + 1,
                                -(int64_t{1} << 60) - 7,
                                0,
                                123456789};
      for (int i = 0; i < 6; ++i) logical.data<int64_t>()[i] = values[i];
    }
    for (const char* text : {"cpu:0-3 P", "cpu:0-3 P(max)", "cpu:0-3 P(min)", "cpu:0-3 [2,2] (P,P)",
                             "cpu:0-3 [2,2] (P(max),P(min))"}) {
      Rng rng(11);
      const Layout layout = ParseLayout(text);
      EXPECT_TRUE(BitEqual(Assemble(Distribute(logical, layout, rng), shape, layout), logical))
          << text << " " << DTypeName(dtype);
    }
  }
}

TEST(DistributeTest, NonFiniteFloatsSurvive) {
  Tensor logical(Shape{4}, DType::kF32);
  logical.SetDouble(0, std::numeric_limits<double>::infinity());
  logical.SetDouble(1, -std::numeric_limits<double>::infinity());
  logical.SetDouble(2, 3.0e38);  // parts of this size could overflow
  logical.SetDouble(3, -2.5);
  for (const char* text : {"cpu:0-3 P", "cpu:0-3 P(max)", "cpu:0-3 P(min)"}) {
    Rng rng(5);
    const Layout layout = ParseLayout(text);
    const Tensor back = Assemble(Distribute(logical, layout, rng), logical.shape(), layout);
    EXPECT_LE(CloseRatio(back, logical, 1e-5, 1e-5), 1.0) << text << " " << back.ToString();
  }
}

TEST(DistributeTest, EmptyAndScalarTensors) {
  Rng rng(6);
  const Tensor empty = Tensor::Random(Shape{0, 3}, DType::kF32, rng);
  for (const char* text : {"cpu:0-2 S(0)", "cpu:0-2 S(1)", "cpu:0-2 P", "cpu:0-2 B"}) {
    const Layout layout = ParseLayout(text);
    EXPECT_TRUE(BitEqual(Assemble(Distribute(empty, layout, rng), empty.shape(), layout), empty));
  }
  const Tensor scalar = Tensor::Random(Shape{}, DType::kI64, rng);
  for (const char* text : {"cpu:0-2 P", "cpu:0-3 [2,2] (B,P(min))"}) {
    const Layout layout = ParseLayout(text);
    EXPECT_TRUE(BitEqual(Assemble(Distribute(scalar, layout, rng), Shape{}, layout), scalar));
  }
  // Two elements over four devices: the last two hold nothing.
  const Tensor two = Tensor::Random(Shape{2}, DType::kI32, rng);
  const Layout four = ParseLayout("cpu:0-3 S(0)");
  const std::vector<Tensor> parts = Distribute(two, four, rng);
  EXPECT_EQ(parts[2].numel(), 0);
  EXPECT_EQ(parts[3].numel(), 0);
  EXPECT_TRUE(BitEqual(Assemble(parts, two.shape(), four), two));
}

// No element is split as value/n, and no two devices hold the same partial tensor.
TEST(DistributeTest, PartialSumsAreAsymmetric) {
  for (DType dtype : {DType::kF32, DType::kI32, DType::kI64, DType::kF64}) {
    Tensor logical(Shape{64}, dtype);
    logical.Fill(8);  // 8 / 4 = 2 would be the symmetric split
    Rng rng(7);
    const std::vector<Tensor> parts = Distribute(logical, ParseLayout("cpu:0-3 P"), rng);
    for (int64_t i = 0; i < logical.numel(); ++i) {
      bool all_equal = true;
      for (int m = 1; m < 4; ++m)
        all_equal = all_equal && parts[m].GetDouble(i) == parts[0].GetDouble(i);
      EXPECT_FALSE(all_equal) << DTypeName(dtype) << " element " << i;
    }
    for (int a = 0; a < 4; ++a) {
      for (int b = a + 1; b < 4; ++b) EXPECT_FALSE(BitEqual(parts[a], parts[b])) << a << b;
    }
  }
}

TEST(DistributeTest, PartialMaxAndMinHaveOneRandomHolder) {
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) {
    for (DType dtype : {DType::kF32, DType::kI32, DType::kBF16}) {
      Rng rng(8);
      const Tensor logical = Tensor::Random(Shape{200}, dtype, rng);
      const Layout layout{ParsePlacement("cpu:0-3"), NdSbp({Sbp::Partial(op)})};
      const std::vector<Tensor> parts = Distribute(logical, layout, rng);
      std::vector<int> holders(4, 0);
      for (int64_t i = 0; i < logical.numel(); ++i) {
        const double v = logical.GetDouble(i);
        int exact = 0;
        for (int m = 0; m < 4; ++m) {
          const double x = parts[m].GetDouble(i);
          if (x == v) {
            ++exact;
            ++holders[m];
          } else {
            EXPECT_TRUE(op == ReduceOp::kMax ? x < v : x > v) << DTypeName(dtype);
          }
        }
        EXPECT_EQ(exact, 1) << DTypeName(dtype) << " element " << i;
      }
      // The holder is random: every device holds some of the values.
      for (int m = 0; m < 4; ++m) EXPECT_GT(holders[m], 20) << DTypeName(dtype) << " " << m;
    }
  }
}

TEST(DistributeTest, SeedsDecideTheDecomposition) {
  const Layout layout = ParseLayout("cpu:0-3 [2,2] (P,P(max))");
  Rng data(9);
  const Tensor logical = Tensor::Random(Shape{4, 4}, DType::kF32, data);
  Rng a(1), b(1), c(2);
  const std::vector<Tensor> pa = Distribute(logical, layout, a);
  const std::vector<Tensor> pb = Distribute(logical, layout, b);
  const std::vector<Tensor> pc = Distribute(logical, layout, c);
  bool differs = false;
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(BitEqual(pa[i], pb[i])) << i;
    differs = differs || !BitEqual(pa[i], pc[i]);
  }
  EXPECT_TRUE(differs);
}

TEST(DistributeTest, AssembleRejectsMismatchedReplicas) {
  Rng rng(10);
  const Tensor logical = Tensor::Random(Shape{4, 3}, DType::kI32, rng);

  const Layout flat = ParseLayout("cpu:0-3 B");
  std::vector<Tensor> physical = Distribute(logical, flat, rng);
  physical[3].SetDouble(5, physical[3].GetDouble(5) + 1);
  std::string m = SbpMessage(physical, logical.shape(), flat);
  EXPECT_NE(m.find("replicas on cpu:0 and cpu:3 differ"), std::string::npos) << m;

  const Layout mesh = ParseLayout("cpu:0-3 [2,2] (B,S(0))");
  physical = Distribute(logical, mesh, rng);
  physical[3].SetDouble(0, physical[3].GetDouble(0) - 1);
  m = SbpMessage(physical, logical.shape(), mesh);
  EXPECT_NE(m.find("replicas on cpu:1 and cpu:3 differ"), std::string::npos) << m;

  const Layout ids = ParseLayout("cuda:4-7 [2,2] (S(1),B)");
  physical = Distribute(logical, ids, rng);
  physical[2].SetDouble(1, 99999);
  m = SbpMessage(physical, logical.shape(), ids);
  EXPECT_NE(m.find("replicas on cuda:6 and cuda:7 differ"), std::string::npos) << m;

  // Floats: even a sign of zero counts, replicas must agree bit for bit.
  const Tensor zeros(Shape{2}, DType::kF32);
  physical = Distribute(zeros, flat, rng);
  physical[1].SetDouble(0, -0.0);
  EXPECT_THROW(Assemble(physical, zeros.shape(), flat), SbpError);
}

TEST(DistributeTest, AssembleRejectsBadPhysicalTensors) {
  Rng rng(12);
  const Tensor logical = Tensor::Random(Shape{7, 5}, DType::kF32, rng);
  const Layout layout = ParseLayout("cpu:0-3 [2,2] (S(0),P)");
  const std::vector<Tensor> good = Distribute(logical, layout, rng);

  std::vector<Tensor> fewer(good.begin(), good.end() - 1);
  EXPECT_THROW(Assemble(fewer, logical.shape(), layout), ShapeError);
  EXPECT_THROW(Assemble({}, logical.shape(), layout), ShapeError);

  std::vector<Tensor> bad_shape = good;
  bad_shape[2] = Tensor(Shape{4, 5}, DType::kF32);  // device 2 holds rows [4:7]
  std::string m = ShapeMessage(bad_shape, logical.shape(), layout);
  EXPECT_NE(m.find("cpu:2"), std::string::npos) << m;
  EXPECT_NE(m.find("[4,5]"), std::string::npos) << m;

  std::vector<Tensor> bad_dtype = good;
  bad_dtype[1] = Tensor(good[1].shape(), DType::kF64);
  m = ShapeMessage(bad_dtype, logical.shape(), layout);
  EXPECT_NE(m.find("cpu:1"), std::string::npos) << m;

  // The wrong logical shape makes every physical shape wrong.
  EXPECT_THROW(Assemble(good, Shape{8, 5}, layout), ShapeError);
  // A layout that does not fit the tensor is an SbpError, for both directions.
  const Layout bad = ParseLayout("cpu:0-3 [2,2] (S(2),P)");
  EXPECT_THROW(Distribute(logical, bad, rng), SbpError);
  EXPECT_THROW(Assemble(good, logical.shape(), bad), SbpError);
}

}  // namespace
}  // namespace twinflow::sbp
