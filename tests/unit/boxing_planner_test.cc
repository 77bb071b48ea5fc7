// The planner's named transitions: each single-axis change on one placement is one primitive
// of the expected kind, local steps move no bytes, identity is empty, and plans are correct
// when run by the reference executor.
#include "engine/sbp/boxing_planner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "engine/sbp/boxing_executor.h"
#include "engine/sbp/boxing_graph.h"
#include "engine/sbp/distribute.h"

namespace twinflow::sbp {
namespace {

const AlphaBetaCostModel kCost;

BoxingPlan Plan(const std::string& src, const std::string& dst, Shape shape = Shape{8, 6}) {
  return PlanBoxing(shape, DType::kF32, ParseLayout(src), ParseLayout(dst), kCost);
}

void ExpectSingleStep(const std::string& src, const std::string& dst, BoxingStepKind kind) {
  const BoxingPlan plan = Plan(src, dst);
  ASSERT_EQ(plan.steps.size(), 1u) << plan.ToString();
  EXPECT_EQ(plan.steps[0].kind, kind) << plan.ToString();
  EXPECT_GT(plan.time(), 0.0);
  EXPECT_GT(plan.cross_device_bytes(), 0);
}

TEST(BoxingPlanner, PartialToBroadcastIsOneAllReduce) {
  ExpectSingleStep("cpu:0-3 P", "cpu:0-3 B", BoxingStepKind::kAllReduce);
  ExpectSingleStep("cpu:0-3 P(max)", "cpu:0-3 B", BoxingStepKind::kAllReduce);
}

TEST(BoxingPlanner, SplitToBroadcastIsOneAllGather) {
  for (int axis : {0, 1}) {
    const std::string split = "S(" + std::to_string(axis) + ")";
    ExpectSingleStep("cpu:0-3 " + split, "cpu:0-3 B", BoxingStepKind::kAllGather);
    EXPECT_EQ(Plan("cpu:0-3 " + split, "cpu:0-3 B").steps[0].gather_axis, axis);
  }
}

TEST(BoxingPlanner, PartialToSplitIsOneReduceScatter) {
  for (int axis : {0, 1}) {
    const std::string split = "S(" + std::to_string(axis) + ")";
    ExpectSingleStep("cpu:0-3 P", "cpu:0-3 " + split, BoxingStepKind::kReduceScatter);
    EXPECT_EQ(Plan("cpu:0-3 P", "cpu:0-3 " + split).steps[0].scatter_axis, axis);
  }
}

TEST(BoxingPlanner, SplitToOtherSplitIsOneAllToAll) {
  ExpectSingleStep("cpu:0-3 S(0)", "cpu:0-3 S(1)", BoxingStepKind::kAllToAll);
  ExpectSingleStep("cpu:0-3 S(1)", "cpu:0-3 S(0)", BoxingStepKind::kAllToAll);
}

TEST(BoxingPlanner, BroadcastToSplitIsLocalSliceMovingNoBytes) {
  for (const char* dst : {"cpu:0-3 S(0)", "cpu:0-3 S(1)"}) {
    const BoxingPlan plan = Plan("cpu:0-3 B", dst);
    ASSERT_EQ(plan.steps.size(), 1u) << plan.ToString();
    EXPECT_EQ(plan.steps[0].kind, BoxingStepKind::kLocalSlice);
    EXPECT_EQ(plan.cross_device_bytes(), 0);
    EXPECT_EQ(plan.time(), 0.0);
  }
}

TEST(BoxingPlanner, IdentityIsEmptyAndFree) {
  for (const char* layout : {"cpu:0-3 [2,2] (S(0),P)", "cpu:0-3 B", "cpu:5 P(min)"}) {
    const BoxingPlan plan = Plan(layout, layout);
    EXPECT_TRUE(plan.steps.empty());
    EXPECT_EQ(plan.time(), 0.0);
    EXPECT_EQ(plan.cross_device_bytes(), 0);
  }
}

TEST(BoxingPlanner, MeshAxisCollectiveUsesAxisGroups) {
  const BoxingPlan plan = Plan("cpu:0-3 [2,2] (S(0),P)", "cpu:0-3 [2,2] (S(0),B)");
  ASSERT_EQ(plan.steps.size(), 1u);
  const BoxingStep& step = plan.steps[0];
  EXPECT_EQ(step.kind, BoxingStepKind::kAllReduce);
  EXPECT_EQ(step.mesh_axis, 1);
  EXPECT_EQ(step.groups, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
}

TEST(BoxingPlanner, UnevenSplitsStillOneAllGather) {
  const BoxingPlan plan = Plan("cpu:0-3 S(0)", "cpu:0-3 B", Shape{7, 5});
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].kind, BoxingStepKind::kAllGather);
}

TEST(BoxingPlanner, RejectsLayoutsThatDoNotFitTheShape) {
  EXPECT_THROW(Plan("cpu:0-3 S(7)", "cpu:0-3 B"), SbpError);
  EXPECT_THROW(Plan("cpu:0-3 B", "cpu:0-3 [2,2] S(0)"), SbpError);
}

TEST(BoxingPlanner, IsDeterministic) {
  const std::string src = "cpu:0-3 [2,2] (S(0),B)", dst = "cpu:4-5 [2] P";
  EXPECT_EQ(Plan(src, dst, Shape{7, 5}).ToString(), Plan(src, dst, Shape{7, 5}).ToString());
}

// The example and a few cross-placement cases, run end to end.
TEST(BoxingPlanner, CrossPlacementPlansRunCorrectly) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cpu:0-3 [2,2] (S(0),B)", "cpu:4-5 [2] P"},
      {"cpu:0-3 [2,2] (P,S(1))", "cpu:2-7 [3,2] (S(1),S(0))"},
      {"cpu:0 B", "cpu:1-8 [2,4] (B,B)"},
      {"cpu:0-7 [2,4] (P,P)", "cpu:3 B"},
      {"cpu:0-5 S(0)", "cuda:0-1 S(1)"},
  };
  Rng rng(7);
  for (const auto& [src, dst] : cases) {
    const Shape shape{7, 5};
    const Tensor x = Tensor::Random(shape, DType::kI64, rng);
    const BoxingPlan plan =
        PlanBoxing(shape, DType::kI64, ParseLayout(src), ParseLayout(dst), kCost);
    const BoxingResult result = ExecuteBoxing(plan, Distribute(x, ParseLayout(src), rng));
    EXPECT_TRUE(BitEqual(Assemble(result.outputs, shape, ParseLayout(dst)), x))
        << src << " -> " << dst << "\n"
        << plan.ToString();
    EXPECT_GT(plan.time(), 0.0);
  }
}

// Broadcasting one device's tensor to eight others is a broadcast, not eight sends from it.
TEST(BoxingPlanner, FanOutUsesBroadcast) {
  const BoxingPlan plan = Plan("cpu:0 B", "cpu:1-8 [2,4] (B,B)", Shape{256, 256});
  ASSERT_EQ(plan.steps.size(), 1u) << plan.ToString();
  EXPECT_EQ(plan.steps[0].kind, BoxingStepKind::kBroadcast);
}

// A dense reshard between nodes prefers the intra-node fabric for the heavy part: the bytes
// that cross nodes are no more than one copy of the tensor.
TEST(BoxingPlanner, CrossNodeReshardSendsEachByteOverTheNetworkOnce) {
  AlphaBetaConfig config;
  config.devices_per_node = 4;
  const AlphaBetaCostModel cost(config);
  const Shape shape{64, 64};
  const BoxingPlan plan =
      PlanBoxing(shape, DType::kF32, ParseLayout("cpu:0-3 S(0)"), ParseLayout("cpu:4-7 B"), cost);
  const int64_t tensor_bytes = shape.numel() * 4;
  const LinkBytes bytes = plan.link_bytes();
  ASSERT_TRUE(bytes.count(LinkClass::kInterNode)) << plan.ToString();
  EXPECT_LE(bytes.at(LinkClass::kInterNode), tensor_bytes) << plan.ToString();
}

// Axes of extent 1 take only the endpoints' Sbps in the search, so deep meshes of them plan at
// once (a mesh of ten took 10 GB and never finished), and the plans still move the data right.
TEST(BoxingPlanner, UnitMeshAxesArePlannedAtOnceAndCorrectly) {
  const Shape shape{8, 6};
  Rng rng(11);
  const Tensor x = Tensor::Random(shape, DType::kI64, rng);
  for (const auto& [src, dst] : std::vector<std::pair<std::string, std::string>>{
           {"cpu:0 [1,1,1,1,1,1,1,1] (B,B,B,B,B,B,B,B)", "cpu:0 B"},
           {"cpu:0-3 [1,4,1] (P,S(0),B)", "cpu:0-3 [1,4,1] (S(1),B,P)"},
           {"cpu:0-3 [1,1,4,1,1,1] (S(0),P,S(1),B,B,P)", "cpu:4-7 [4,1,1] (S(0),S(1),P)"}}) {
    const auto start = std::chrono::steady_clock::now();
    const BoxingPlan plan =
        PlanBoxing(shape, DType::kI64, ParseLayout(src), ParseLayout(dst), kCost);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << src;
    const BoxingResult result = ExecuteBoxing(plan, Distribute(x, ParseLayout(src), rng));
    EXPECT_TRUE(BitEqual(Assemble(result.outputs, shape, ParseLayout(dst)), x))
        << src << " -> " << dst << "\n"
        << plan.ToString();
  }
}

// A search that would span more layouts than the cap is refused naming it; a mesh has at most
// kMaxMeshRank axes.
TEST(BoxingPlanner, HugeSearchesAndDeepMeshesAreRefusedNamingTheCap) {
  try {
    Plan("cpu:0-255 [2,2,2,2,2,2,2,2] (S(0),B,B,B,B,B,B,P)",
         "cpu:0-255 [2,2,2,2,2,2,2,2] (B,B,B,B,B,B,B,S(1))");
    ADD_FAILURE() << "no error";
  } catch (const SbpError& e) {
    EXPECT_NE(e.message().find("cap of " + std::to_string(kMaxBoxingLayouts)), std::string::npos)
        << e.message();
  }
  EXPECT_THROW(ParseLayout("cpu:0 [1,1,1,1,1,1,1,1,1] (B,B,B,B,B,B,B,B,B)"), SbpError);
  EXPECT_NO_THROW(ParseLayout("cpu:0 [1,1,1,1,1,1,1,1] (B,B,B,B,B,B,B,B)"));
}

}  // namespace
}  // namespace twinflow::sbp
