// The reference boxing executor runs every step kind, alone and chained, and keeps the logical
// tensor (integer dtypes exactly).
#include "engine/sbp/boxing_executor.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/core/rng.h"
#include "engine/sbp/distribute.h"
#include "tests/unit/boxing_test_helpers.h"

namespace twinflow::sbp {
namespace {

using namespace boxing_test_helpers;  // NOLINT: test helpers

TEST(BoxingExecutor, AllGatherSplitToBroadcast) {
  BoxingStep s = Step(BoxingStepKind::kAllGather, "cpu:0-1 S(0)", "cpu:0-1 B", 0);
  s.groups = {{0, 1}};
  s.gather_axis = 0;
  const BoxingResult r = RunAndCheck(Plan(Shape{7, 5}, DType::kI32, {s}), 1);
  EXPECT_EQ(r.cross_device_bytes, (20 + 15) * 4);  // each receives the other's piece
}

TEST(BoxingExecutor, ReduceScatterPartialToSplit) {
  BoxingStep s = Step(BoxingStepKind::kReduceScatter, "cpu:0-3 P", "cpu:0-3 S(1)", 0);
  s.groups = {{0, 1, 2, 3}};
  s.scatter_axis = 1;
  const BoxingResult r = RunAndCheck(Plan(Shape{3, 7}, DType::kI32, {s}), 2);
  EXPECT_EQ(r.cross_device_bytes, 3 * (6 + 6 + 6 + 3) * 4);  // columns 2,2,2,1
}

TEST(BoxingExecutor, ReduceScatterMaxOnFloats) {
  BoxingStep s = Step(BoxingStepKind::kReduceScatter, "cpu:0-2 P(max)", "cpu:0-2 S(0)", 0);
  s.groups = {{0, 1, 2}};
  s.scatter_axis = 0;
  s.reduce_op = ReduceOp::kMax;
  RunAndCheck(Plan(Shape{7, 3}, DType::kF32, {s}), 3);
}

TEST(BoxingExecutor, AllReduceOnSecondMeshAxis) {
  BoxingStep s =
      Step(BoxingStepKind::kAllReduce, "cpu:0-3 [2,2] (S(0),P)", "cpu:0-3 [2,2] (S(0),B)", 1);
  s.groups = {{0, 1}, {2, 3}};
  const BoxingResult r = RunAndCheck(Plan(Shape{6, 4}, DType::kI64, {s}), 4);
  EXPECT_EQ(r.cross_device_bytes, 4 * (3 * 4 * 8));
}

TEST(BoxingExecutor, AllToAllRowsToColumns) {
  BoxingStep s = Step(BoxingStepKind::kAllToAll, "cpu:0-2 S(0)", "cpu:0-2 S(1)", 0);
  s.groups = {{0, 1, 2}};
  s.gather_axis = 0;
  s.scatter_axis = 1;
  const BoxingResult r = RunAndCheck(Plan(Shape{7, 5}, DType::kI32, {s}), 5);
  // Blocks are rows (3,2,2) x columns (2,2,1); the diagonal stays put.
  EXPECT_EQ(r.cross_device_bytes, (35 - (3 * 2 + 2 * 2 + 2 * 1)) * 4);
}

TEST(BoxingExecutor, LocalSlices) {
  const BoxingStep b_to_s = Step(BoxingStepKind::kLocalSlice, "cpu:0-2 B", "cpu:0-2 S(1)", 0);
  EXPECT_EQ(RunAndCheck(Plan(Shape{4, 7}, DType::kI32, {b_to_s}), 6).cross_device_bytes, 0);
  const BoxingStep b_to_p =
      Step(BoxingStepKind::kLocalSlice, "cpu:0-3 [2,2] (B,S(0))", "cpu:0-3 [2,2] (P,S(0))", 0);
  EXPECT_EQ(RunAndCheck(Plan(Shape{5, 3}, DType::kI64, {b_to_p}), 7).cross_device_bytes, 0);
  const BoxingStep b_to_pmax = Step(BoxingStepKind::kLocalSlice, "cpu:0-1 B", "cpu:0-1 P(max)", 0);
  RunAndCheck(Plan(Shape{3, 3}, DType::kF32, {b_to_pmax}), 8);
  const BoxingStep s_to_p = Step(BoxingStepKind::kLocalSlice, "cpu:0-2 S(0)", "cpu:0-2 P", 0);
  RunAndCheck(Plan(Shape{7, 2}, DType::kI32, {s_to_p}), 9);
  // A mesh axis of one device may change freely, even away from partial.
  const BoxingStep size_one =
      Step(BoxingStepKind::kLocalSlice, "cpu:0-1 [1,2] (P,S(0))", "cpu:0-1 [1,2] (S(1),S(0))", 0);
  RunAndCheck(Plan(Shape{4, 4}, DType::kI32, {size_one}), 10);
}

TEST(BoxingExecutor, LocalSliceValuesAreExact) {
  // B -> P(sum): the coordinate-0 device keeps the value, the others hold zeros.
  const BoxingStep s = Step(BoxingStepKind::kLocalSlice, "cpu:0-1 B", "cpu:0-1 P", 0);
  Tensor t(Shape{2}, DType::kI32);
  t.SetDouble(0, 3);
  t.SetDouble(1, -4);
  const BoxingResult r = ExecuteBoxing(Plan(Shape{2}, DType::kI32, {s}), {t, t});
  EXPECT_TRUE(BitEqual(r.outputs[0], t));
  EXPECT_EQ(r.outputs[1].GetDouble(0), 0);
  EXPECT_EQ(r.outputs[1].GetDouble(1), 0);
}

TEST(BoxingExecutor, BroadcastToAnotherPlacement) {
  BoxingStep s = Step(BoxingStepKind::kBroadcast, "cpu:0-1 B", "cpu:1-3 B");
  s.root = 1;  // cpu:1, which is also in the destination and keeps its copy for free
  const BoxingResult r = RunAndCheck(Plan(Shape{3, 4}, DType::kI32, {s}), 11);
  EXPECT_EQ(r.cross_device_bytes, 2 * 12 * 4);
}

TEST(BoxingExecutor, SendRecvBetweenDisjointPlacements) {
  const Shape shape{5, 7};
  BoxingStep s = Step(BoxingStepKind::kSendRecv, "cpu:0-1 S(0)", "cpu:2-4 S(1)");
  s.transfers = AllTransfers(shape, DType::kI32, s.from, s.to);
  const BoxingResult r = RunAndCheck(Plan(shape, DType::kI32, {s}), 12);
  EXPECT_EQ(r.cross_device_bytes, 35 * 4);
}

TEST(BoxingExecutor, SendRecvCountsOnlyCrossDeviceCopies) {
  const Shape shape{6, 2};
  // cpu:1 holds rows 3:6 before and after; only rows 0:3 move, cpu:0 -> cpu:2.
  BoxingStep s = Step(BoxingStepKind::kSendRecv, "cpu:0-1 S(0)", "cpu:2,1 S(0)");
  s.transfers = AllTransfers(shape, DType::kF64, s.from, s.to);
  const BoxingResult r = RunAndCheck(Plan(shape, DType::kF64, {s}), 13);
  EXPECT_EQ(r.cross_device_bytes, 3 * 2 * 8);
}

TEST(BoxingExecutor, MultiStepPlanOnTwoDimensionalMesh) {
  // (S(0),S(1)) -> (B,S(1)) by all_gather on mesh axis 0, then -> (B,B) on axis 1, then slice.
  BoxingStep a =
      Step(BoxingStepKind::kAllGather, "cpu:0-3 [2,2] (S(0),S(1))", "cpu:0-3 [2,2] (B,S(1))", 0);
  a.groups = {{0, 2}, {1, 3}};
  a.gather_axis = 0;
  BoxingStep b =
      Step(BoxingStepKind::kAllGather, "cpu:0-3 [2,2] (B,S(1))", "cpu:0-3 [2,2] (B,B)", 1);
  b.groups = {{0, 1}, {2, 3}};
  b.gather_axis = 1;
  const BoxingStep c =
      Step(BoxingStepKind::kLocalSlice, "cpu:0-3 [2,2] (B,B)", "cpu:0-3 [2,2] (S(1),B)", 0);
  RunAndCheck(Plan(Shape{5, 5}, DType::kI32, {a, b, c}), 14);
}

TEST(BoxingExecutor, EmptyPlanPassesInputsThrough) {
  BoxingPlan plan;
  plan.shape = Shape{4};
  plan.dtype = DType::kI32;
  plan.src = plan.dst = L("cpu:0-1 S(0)");
  Rng rng(15);
  const Tensor logical = Tensor::Random(plan.shape, plan.dtype, rng);
  const BoxingResult r = ExecuteBoxing(plan, Distribute(logical, plan.src, rng));
  EXPECT_TRUE(BitEqual(Assemble(r.outputs, plan.shape, plan.dst), logical));
  EXPECT_EQ(r.cross_device_bytes, 0);
}

}  // namespace
}  // namespace twinflow::sbp
