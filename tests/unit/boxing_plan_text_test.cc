// BoxingPlan's text: the identity plan, the step table with bytes per link class and times,
// and the name of every step kind.
#include <gtest/gtest.h>

#include <string>

#include "engine/sbp/boxing_plan.h"
#include "tests/unit/boxing_test_helpers.h"

namespace twinflow::sbp {
namespace {

using namespace boxing_test_helpers;  // NOLINT: test helpers

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
