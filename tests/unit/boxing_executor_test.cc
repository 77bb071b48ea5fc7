#include "engine/sbp/boxing_executor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/sbp/distribute.h"
#include "engine/sbp/slicing.h"

namespace twinflow::sbp {
namespace {

Layout L(const char* text) { return ParseLayout(text); }

BoxingStep Step(BoxingStepKind kind, const char* from, const char* to, int mesh_axis = -1) {
  BoxingStep step;
  step.kind = kind;
  step.from = L(from);
  step.to = L(to);
  step.mesh_axis = mesh_axis;
  return step;
}

BoxingPlan Plan(Shape shape, DType dtype, std::vector<BoxingStep> steps) {
  BoxingPlan plan;
  plan.shape = std::move(shape);
  plan.dtype = dtype;
  plan.src = steps.front().from;
  plan.dst = steps.back().to;
  plan.steps = std::move(steps);
  return plan;
}

// Every non-empty intersection of a source slice with a destination slice.
std::vector<RegionTransfer> AllTransfers(const Shape& shape, DType dtype, const Layout& from,
                                         const Layout& to) {
  std::vector<RegionTransfer> out;
  const std::vector<Region> src = PhysicalRegions(shape, from);
  const std::vector<Region> dst = PhysicalRegions(shape, to);
  for (size_t j = 0; j < dst.size(); ++j) {
    for (size_t i = 0; i < src.size(); ++i) {
      const Region r = src[i].Intersect(dst[j]);
      if (r.empty()) continue;
      out.push_back(
          {static_cast<int64_t>(i), static_cast<int64_t>(j), r, r.numel() * DTypeSize(dtype)});
    }
  }
  return out;
}

// Distributes a random tensor with plan.src, runs the plan and checks that the outputs hold
// the same logical tensor under plan.dst. Integer dtypes must come back exactly.
BoxingResult RunAndCheck(const BoxingPlan& plan, uint64_t seed) {
  Rng rng(seed);
  const Tensor logical = Tensor::Random(plan.shape, plan.dtype, rng);
  std::vector<Tensor> inputs = Distribute(logical, plan.src, rng);
  const Tensor before = Assemble(inputs, plan.shape, plan.src);
  BoxingResult result = ExecuteBoxing(plan, inputs);
  EXPECT_EQ(result.outputs.size(), static_cast<size_t>(plan.dst.placement.size()));
  const Tensor after = Assemble(result.outputs, plan.shape, plan.dst);
  if (IsFloating(plan.dtype)) {
    EXPECT_LE(CloseRatio(after, before, 1e-6, 1e-6), 1.0) << plan.ToString();
  } else {
    EXPECT_TRUE(BitEqual(after, logical)) << plan.ToString();
  }
  return result;
}

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

// Runs a wrong plan on well-formed inputs and returns the error message.
template <typename E>
std::string ExpectThrows(const BoxingPlan& plan) {
  Rng rng(99);
  const Tensor logical = Tensor::Random(plan.shape, plan.dtype, rng);
  try {
    ExecuteBoxing(plan, Distribute(logical, plan.src, rng));
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "the wrong plan passed:\n" << plan.ToString();
  return "";
}

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

namespace twinflow::sbp {
namespace {

TEST(BoxingPlanText, EmptyPlanIsIdentity) {
  BoxingPlan plan;
  plan.shape = Shape{7, 5};
  plan.src = plan.dst = ParseLayout("cpu:0-1 S(0)");
  EXPECT_EQ(plan.ToString(),
            "boxing f32[7,5]: cpu:0-1 [2] S(0) -> cpu:0-1 [2] S(0)\n"
            "  identity: the layouts hold the same data; nothing moves (cost 0)\n");
  EXPECT_EQ(plan.time(), 0.0);
  EXPECT_EQ(plan.cross_device_bytes(), 0);
}

TEST(BoxingPlanText, TableListsStepsBytesAndTimes) {
  BoxingStep a =
      Step(BoxingStepKind::kAllGather, "cpu:0-3 [2,2] (S(0),B)", "cpu:0-3 [2,2] (B,B)", 0);
  a.groups = {{0, 2}, {1, 3}};
  a.gather_axis = 0;
  a.link_bytes = {{LinkClass::kIntraNode, 140}};
  a.time = 4.1e-6;
  BoxingStep b = Step(BoxingStepKind::kSendRecv, "cpu:0-3 [2,2] (B,B)", "cpu:4-11 S(1)");
  const Shape shape{7, 8};
  for (int64_t j = 0; j < 8; ++j) {
    b.transfers.push_back({j % 4, j, Region{{Range{0, 7}, Range{j, j + 1}}}, 28});
  }
  b.link_bytes = {{LinkClass::kIntraNode, 112},
                  {LinkClass::kInterNode, 3 * 1024 * 1024 / 2},
                  {LinkClass::kSameDevice, 4}};
  b.time = 2.5e-3;
  const BoxingPlan plan = Plan(shape, DType::kF32, {a, b});
  EXPECT_EQ(b.cross_device_bytes(), 112 + 3 * 1024 * 1024 / 2);
  EXPECT_EQ(plan.cross_device_bytes(), 140 + 112 + 3 * 1024 * 1024 / 2);
  EXPECT_DOUBLE_EQ(plan.time(), 4.1e-6 + 2.5e-3);
  EXPECT_EQ(plan.link_bytes().at(LinkClass::kIntraNode), 252);

  const std::string text = plan.ToString();
  EXPECT_EQ(text, plan.ToString());  // deterministic
  for (const char* part :
       {"boxing f32[7,8]: cpu:0-3 [2,2] (S(0),B) -> cpu:4-11 [8] S(1)\n",
        "all_gather(mesh 0, axis 0)", "(S(0),B) -> (B,B)", "[cpu:0 cpu:2] [cpu:1 cpu:3]", "140 B",
        "4.1 us", "send_recv", "8 transfers (8 cross-device)", "cpu:0 -> cpu:4 [0:7,0:1] 28 B",
        "... and 2 more", "1.5 MiB", "2.5 ms",
        "total: 2 steps, 252 B intra-node, 1.5 MiB inter-node, estimated "
        "2.5 ms\n"}) {
    EXPECT_NE(text.find(part), std::string::npos) << "missing '" << part << "' in\n" << text;
  }
  // Columns line up: the header's labels start where the step rows' cells start.
  const size_t header = text.find("  #");
  const size_t row1 = text.find("  1  ");
  ASSERT_NE(header, std::string::npos);
  ASSERT_NE(row1, std::string::npos);
  const size_t header_line_start = header;
  const size_t row_line_start = row1;
  EXPECT_EQ(text.find("from -> to", header) - header_line_start,
            text.find("cpu:0-3", row1) - row_line_start);
  EXPECT_EQ(text.find("intra-node", header) - header_line_start,
            text.find("140 B", row1) - row_line_start);
}

TEST(BoxingPlanText, NamesEveryKind) {
  EXPECT_STREQ(BoxingStepKindName(BoxingStepKind::kAllGather), "all_gather");
  EXPECT_STREQ(BoxingStepKindName(BoxingStepKind::kAllReduce), "all_reduce");
  EXPECT_STREQ(BoxingStepKindName(BoxingStepKind::kReduceScatter), "reduce_scatter");
  EXPECT_STREQ(BoxingStepKindName(BoxingStepKind::kAllToAll), "all_to_all");
  EXPECT_STREQ(BoxingStepKindName(BoxingStepKind::kBroadcast), "broadcast");
  EXPECT_STREQ(BoxingStepKindName(BoxingStepKind::kLocalSlice), "slice");
  EXPECT_STREQ(BoxingStepKindName(BoxingStepKind::kSendRecv), "send_recv");
}

}  // namespace
}  // namespace twinflow::sbp
