// The reference boxing executor rejects wrong plans (bad groups, missing transfers, steps that
// do not do what they claim, ill-fitting inputs) with an error naming the step and device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/sbp/boxing_executor.h"
#include "engine/sbp/distribute.h"
#include "tests/unit/boxing_test_helpers.h"

namespace twinflow::sbp {
namespace {

using namespace boxing_test_helpers;  // NOLINT: test helpers

TEST(BoxingExecutor, RejectsWrongGroups) {
  BoxingStep s =
      Step(BoxingStepKind::kAllReduce, "cpu:0-3 [2,2] (S(0),P)", "cpu:0-3 [2,2] (S(0),B)", 1);
  s.groups = {{0, 1}, {2}};
  EXPECT_NE(ExpectThrows<SbpError>(Plan(Shape{4, 4}, DType::kI32, {s})).find("cpu:3"),
            std::string::npos);
  s.groups = {{0, 1}, {1, 2, 3}};
  ExpectThrows<SbpError>(Plan(Shape{4, 4}, DType::kI32, {s}));
  s.groups = {{0, 1}, {2, 4}};
  ExpectThrows<SbpError>(Plan(Shape{4, 4}, DType::kI32, {s}));
  // Groups along the wrong mesh axis, or out of axis order where order is the data order.
  BoxingStep g =
      Step(BoxingStepKind::kAllGather, "cpu:0-3 [2,2] (S(0),S(1))", "cpu:0-3 [2,2] (S(0),B)", 1);
  g.gather_axis = 1;
  g.groups = {{0, 2}, {1, 3}};
  const std::string msg = ExpectThrows<SbpError>(Plan(Shape{4, 4}, DType::kI32, {g}));
  EXPECT_NE(msg.find("[cpu:0 cpu:2]"), std::string::npos) << msg;
  g.groups = {{1, 0}, {2, 3}};
  ExpectThrows<SbpError>(Plan(Shape{4, 4}, DType::kI32, {g}));
  g.groups = {{0, 1}, {2, 3}};
  g.mesh_axis = 2;
  ExpectThrows<SbpError>(Plan(Shape{4, 4}, DType::kI32, {g}));
  // Without a mesh axis any partition is accepted, but mismatched pieces still fail.
  g.mesh_axis = -1;
  g.groups = {{0, 2}, {1, 3}};
  ExpectThrows<ShapeError>(Plan(Shape{5, 4}, DType::kI32, {g}));
  // all_reduce does not care about ring order.
  BoxingStep r =
      Step(BoxingStepKind::kAllReduce, "cpu:0-3 [2,2] (S(0),P)", "cpu:0-3 [2,2] (S(0),B)", 1);
  r.groups = {{3, 2}, {1, 0}};
  RunAndCheck(Plan(Shape{4, 4}, DType::kI32, {r}), 16);
}

TEST(BoxingExecutor, RejectsMissingTransfer) {
  const Shape shape{5, 4};
  BoxingStep s = Step(BoxingStepKind::kSendRecv, "cpu:0-1 S(0)", "cpu:4-5 S(1)");
  s.transfers = AllTransfers(shape, DType::kF32, s.from, s.to);
  s.transfers.pop_back();  // cpu:1 -> cpu:5 rows 3:5, columns 2:4
  const std::string msg = ExpectThrows<SbpError>(Plan(shape, DType::kF32, {s}));
  EXPECT_NE(msg.find("device cpu:5 receives 6 of 10 elements"), std::string::npos) << msg;
  // A duplicated transfer covers part of the destination twice.
  s.transfers = AllTransfers(shape, DType::kF32, s.from, s.to);
  s.transfers.push_back(s.transfers.front());
  ExpectThrows<SbpError>(Plan(shape, DType::kF32, {s}));
  // A region the source does not hold.
  s.transfers = AllTransfers(shape, DType::kF32, s.from, s.to);
  s.transfers[0].src_index = 1;
  ExpectThrows<SbpError>(Plan(shape, DType::kF32, {s}));
}

TEST(BoxingExecutor, RejectsStepFromTheWrongLayout) {
  BoxingStep a = Step(BoxingStepKind::kAllGather, "cpu:0-1 S(0)", "cpu:0-1 B", 0);
  a.groups = {{0, 1}};
  a.gather_axis = 0;
  const BoxingStep b = Step(BoxingStepKind::kLocalSlice, "cpu:0-1 S(0)", "cpu:0-1 S(1)", 0);
  const std::string msg = ExpectThrows<SbpError>(Plan(Shape{4, 4}, DType::kI32, {a, b}));
  EXPECT_NE(msg.find("step 2 starts from cpu:0-1 [2] S(0) but the tensor is laid out as"),
            std::string::npos)
      << msg;
}

TEST(BoxingExecutor, RejectsStepsThatDoNotDoWhatTheyClaim) {
  // An all_gather that claims to end split on the other axis.
  BoxingStep g = Step(BoxingStepKind::kAllGather, "cpu:0-1 S(0)", "cpu:0-1 S(1)", 0);
  g.groups = {{0, 1}};
  g.gather_axis = 0;
  ExpectThrows<ShapeError>(Plan(Shape{4, 4}, DType::kI32, {g}));
  // Slicing a partial value locally.
  ExpectThrows<SbpError>(Plan(Shape{4, 4}, DType::kI32,
                              {Step(BoxingStepKind::kLocalSlice, "cpu:0-1 P", "cpu:0-1 S(0)", 0)}));
  // S -> B is not local.
  ExpectThrows<SbpError>(Plan(Shape{4, 4}, DType::kI32,
                              {Step(BoxingStepKind::kLocalSlice, "cpu:0-1 S(0)", "cpu:0-1 B", 0)}));
  // A broadcast from a device that holds a piece.
  BoxingStep bc = Step(BoxingStepKind::kBroadcast, "cpu:0-1 S(0)", "cpu:2-3 B");
  bc.root = 0;
  ExpectThrows<SbpError>(Plan(Shape{4, 4}, DType::kI32, {bc}));
  bc = Step(BoxingStepKind::kBroadcast, "cpu:0-1 B", "cpu:2-3 P");
  bc.root = 0;
  ExpectThrows<SbpError>(Plan(Shape{4, 4}, DType::kI32, {bc}));
  bc.to = L("cpu:2-3 P(max)");
  RunAndCheck(Plan(Shape{4, 4}, DType::kI32, {bc}), 17);
  // A plan that stops short of its destination.
  BoxingPlan shortplan = Plan(Shape{4, 4}, DType::kI32,
                              {Step(BoxingStepKind::kLocalSlice, "cpu:0-1 B", "cpu:0-1 S(0)", 0)});
  shortplan.dst = L("cpu:0-1 S(1)");
  ExpectThrows<SbpError>(shortplan);
}

TEST(BoxingExecutor, RejectsInputsThatDoNotFitTheSourceLayout) {
  const BoxingPlan plan = Plan(Shape{4, 3}, DType::kI32,
                               {Step(BoxingStepKind::kLocalSlice, "cpu:0-1 B", "cpu:0-1 S(0)", 0)});
  const Tensor whole(Shape{4, 3}, DType::kI32);
  EXPECT_THROW(ExecuteBoxing(plan, {whole}), ShapeError);
  EXPECT_THROW(ExecuteBoxing(plan, {whole, Tensor(Shape{4, 3}, DType::kF32)}), ShapeError);
  try {
    ExecuteBoxing(plan, {whole, Tensor(Shape{2, 3}, DType::kI32)});
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("cpu:1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace twinflow::sbp
