// Strategy strings: parsing, defaults, errors that name the field, device checks, the
// placements of pipeline stages and the balance of layers over stages.
#include "engine/parallel/strategy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "models/model.h"
#include "planner/lower_options.h"
#include "tests/unit/model_test_helpers.h"

namespace twinflow::models {
namespace {

using namespace twinflow::parallel;  // the strategy under test
using planner::StrategyLowerOptions;

using model_test_helpers::Contains;
using model_test_helpers::InvalidArgumentText;

std::string ParseError(const std::string& text) {
  return InvalidArgumentText([&] { ParseStrategy(text); });
}

TEST(StrategyParse, Defaults) {
  const Strategy s = ParseStrategy("dp=2");
  EXPECT_FALSE(s.automatic);
  EXPECT_EQ(s.dp, 2);
  EXPECT_EQ(s.tp, 1);
  EXPECT_EQ(s.pp, 1);
  EXPECT_EQ(s.micro_batches, 1);
  EXPECT_EQ(s.schedule, Schedule::kOneFOneB);
  EXPECT_EQ(s.hierarchy.rank(), 0);
  EXPECT_EQ(s.devices(), 2);
}

TEST(StrategyParse, AllFields) {
  const Strategy s = ParseStrategy("dp=2,tp=4,pp=3,mb=8,schedule=gpipe");
  EXPECT_EQ(s.dp, 2);
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.pp, 3);
  EXPECT_EQ(s.micro_batches, 8);
  EXPECT_EQ(s.schedule, Schedule::kGPipe);
  EXPECT_EQ(s.devices(), 24);
}

TEST(StrategyParse, FieldOrderDoesNotMatter) {
  const Strategy a = ParseStrategy("schedule=gpipe,pp=2,tp=2,dp=3");
  EXPECT_EQ(a.dp, 3);
  EXPECT_EQ(a.tp, 2);
  EXPECT_EQ(a.pp, 2);
  EXPECT_EQ(a.schedule, Schedule::kGPipe);
  EXPECT_EQ(a.ToString(), ParseStrategy("dp=3,tp=2,pp=2,schedule=gpipe").ToString());
}

TEST(StrategyParse, Auto) {
  const Strategy s = ParseStrategy("auto");
  EXPECT_TRUE(s.automatic);
  EXPECT_EQ(s.hierarchy.rank(), 0);
  EXPECT_EQ(s.ToString(), "auto");
}

TEST(StrategyParse, ScheduleNames) {
  EXPECT_STREQ(ScheduleName(Schedule::kGPipe), "gpipe");
  EXPECT_STREQ(ScheduleName(Schedule::kOneFOneB), "1f1b");
  EXPECT_EQ(ParseStrategy("schedule=1f1b").schedule, Schedule::kOneFOneB);
  EXPECT_EQ(ParseStrategy("schedule=gpipe").schedule, Schedule::kGPipe);
}

TEST(StrategyParse, ToStringRoundTrips) {
  for (const std::string text : {"dp=1", "dp=2,tp=2", "dp=2,tp=2,pp=1,mb=4,schedule=1f1b",
                                 "tp=8,pp=4,mb=16", "dp=8,tp=8,pp=16,schedule=gpipe", "mb=3"}) {
    const Strategy s = ParseStrategy(text);
    const std::string printed = s.ToString();
    const Strategy again = ParseStrategy(printed);
    EXPECT_EQ(again.ToString(), printed) << text;
    EXPECT_EQ(again.dp, s.dp) << text;
    EXPECT_EQ(again.tp, s.tp) << text;
    EXPECT_EQ(again.pp, s.pp) << text;
    EXPECT_EQ(again.micro_batches, s.micro_batches) << text;
    EXPECT_EQ(again.schedule, s.schedule) << text;
  }
  EXPECT_EQ(ParseStrategy("dp=2,tp=2,pp=1,mb=4,schedule=1f1b").ToString(),
            "dp=2,tp=2,pp=1,mb=4,schedule=1f1b");
}

TEST(StrategyParse, RecomputeIsNoneSelectiveOrFull) {
  EXPECT_EQ(ParseStrategy("dp=2").recompute, Recompute::kNone);
  EXPECT_EQ(ParseStrategy("dp=2,recompute=none").recompute, Recompute::kNone);
  const Strategy s = ParseStrategy("pp=2,mb=4,recompute=full");
  EXPECT_EQ(s.recompute, Recompute::kFull);
  EXPECT_EQ(s.ToString(), "dp=1,tp=1,pp=2,mb=4,schedule=1f1b,recompute=full");
  EXPECT_EQ(ParseStrategy(s.ToString()).recompute, Recompute::kFull);
  const Strategy selective = ParseStrategy("dp=2,recompute=selective");
  EXPECT_EQ(selective.recompute, Recompute::kSelective);
  EXPECT_EQ(ParseStrategy(selective.ToString()).recompute, Recompute::kSelective);
  EXPECT_EQ(ParseStrategy("dp=2,recompute=none").ToString(), "dp=2,tp=1,pp=1,mb=1,schedule=1f1b");
  const std::string text = ParseError("recompute=some");
  EXPECT_PRED2(Contains, text, "'recompute'");
  EXPECT_PRED2(Contains, text, "'some'");
}

TEST(StrategyParse, OverlapIsOnOrOff) {
  EXPECT_TRUE(ParseStrategy("dp=2").overlap);
  EXPECT_TRUE(ParseStrategy("dp=2,overlap=on").overlap);
  const Strategy off = ParseStrategy("dp=2,overlap=off");
  EXPECT_FALSE(off.overlap);
  EXPECT_EQ(off.ToString(), "dp=2,tp=1,pp=1,mb=1,schedule=1f1b,overlap=off");
  EXPECT_FALSE(ParseStrategy(off.ToString()).overlap);
  EXPECT_FALSE(StrategyLowerOptions(off).overlap);
  const std::string text = ParseError("overlap=yes");
  EXPECT_PRED2(Contains, text, "'overlap'");
  EXPECT_PRED2(Contains, text, "'yes'");
}

TEST(StrategyParse, BucketIsMebibytesOfGradientsPerAllReduce) {
  EXPECT_EQ(ParseStrategy("dp=2").bucket_mib, 25);
  EXPECT_EQ(StrategyLowerOptions(ParseStrategy("dp=2")).bucket_bytes, int64_t{25} << 20);
  const Strategy none = ParseStrategy("dp=2,bucket=0");
  EXPECT_EQ(StrategyLowerOptions(none).bucket_bytes, 0);
  EXPECT_EQ(none.ToString(), "dp=2,tp=1,pp=1,mb=1,schedule=1f1b,bucket=0");
  EXPECT_EQ(ParseStrategy(none.ToString()).bucket_mib, 0);
  EXPECT_EQ(ParseStrategy("dp=2,bucket=100").bucket_mib, 100);
  for (const char* bad : {"bucket=-1", "bucket=big", "bucket="}) {
    const std::string text = ParseError(bad);
    EXPECT_PRED2(Contains, text, "'bucket'") << bad;
    EXPECT_PRED2(Contains, text, "[0, ") << bad;
  }
}

TEST(StrategyParse, PrecisionAndGradientReduction) {
  EXPECT_EQ(ParseStrategy("dp=2").precision, DType::kF32);
  EXPECT_FALSE(ParseStrategy("dp=2").Autocast());
  const Strategy bf16 = ParseStrategy("dp=2,precision=bf16");
  EXPECT_EQ(bf16.precision, DType::kBF16);
  EXPECT_EQ(bf16.grad_reduce, DType::kF32);  // Megatron's default for bf16
  EXPECT_EQ(bf16.Autocast(), DType::kBF16);
  EXPECT_EQ(bf16.ToString(), "dp=2,tp=1,pp=1,mb=1,schedule=1f1b,precision=bf16");
  const Strategy low = ParseStrategy("dp=2,precision=fp16,grad_reduce=fp16");
  EXPECT_EQ(low.grad_reduce, DType::kF16);
  EXPECT_EQ(ParseStrategy(low.ToString()).ToString(), low.ToString());
  EXPECT_PRED2(Contains, low.ToString(), "precision=fp16,grad_reduce=fp16");
  std::string text = ParseError("precision=f8");
  EXPECT_PRED2(Contains, text, "'precision'");
  EXPECT_PRED2(Contains, text, "'f8'");
  text = ParseError("dp=2,precision=bf16,grad_reduce=fp16");
  EXPECT_PRED2(Contains, text, "'grad_reduce' must be fp32 or the precision (bf16)");
}

TEST(StrategyParse, ZeroStage) {
  EXPECT_EQ(ParseStrategy("dp=2").zero, ZeroStage::kNone);
  const Strategy zero = ParseStrategy("dp=2,tp=2,zero=1");
  EXPECT_EQ(zero.zero, ZeroStage::kOptimizerState);
  EXPECT_EQ(zero.ToString(), "dp=2,tp=2,pp=1,mb=1,schedule=1f1b,zero=1");
  EXPECT_EQ(ParseStrategy(zero.ToString()).ToString(), zero.ToString());
  EXPECT_PRED2(Contains, ParseError("zero=2"), "stage 2");
  EXPECT_PRED2(Contains, ParseError("zero=3"), "not implemented yet");
  EXPECT_PRED2(Contains, ParseError("zero=on"), "'zero' must be 0 or 1, got 'on'");
}

TEST(StrategyParse, VirtualStagesInterleaveThePipeline) {
  EXPECT_EQ(ParseStrategy("pp=2").virtual_stages, 1);
  const Strategy vp = ParseStrategy("pp=2,vp=3,mb=4");
  EXPECT_EQ(vp.virtual_stages, 3);
  EXPECT_EQ(vp.stages(), 6);
  EXPECT_EQ(vp.StagesText(), "pp*vp=6");
  EXPECT_EQ(vp.ToString(), "dp=1,tp=1,pp=2,mb=4,vp=3,schedule=1f1b");
  EXPECT_EQ(ParseStrategy(vp.ToString()).ToString(), vp.ToString());
  EXPECT_EQ(ParseStrategy("pp=2,vp=2").micro_batches, 1) << "one micro-batch: nothing to order";
  EXPECT_PRED2(Contains, ParseError("vp=2"), "needs pp > 1");
  EXPECT_PRED2(Contains, ParseError("pp=2,vp=2,mb=4,schedule=gpipe"), "schedule=gpipe");
  EXPECT_PRED2(Contains, ParseError("pp=2,vp=2,mb=3"), "mb=3 must be a multiple of it");
  EXPECT_PRED2(Contains, ParseError("pp=2,vp=0"), "'vp' must be an integer");
}

TEST(StrategyParse, ZeroBubbleSchedule) {
  const Strategy zb = ParseStrategy("pp=4,mb=8,schedule=zb-h1");
  EXPECT_EQ(zb.schedule, Schedule::kZeroBubbleH1);
  EXPECT_STREQ(ScheduleName(zb.schedule), "zb-h1");
  EXPECT_EQ(ParseStrategy(zb.ToString()).ToString(), zb.ToString());
  const compiler::LowerOptions lower = StrategyLowerOptions(zb);
  EXPECT_EQ(lower.schedule, Schedule::kZeroBubbleH1);
  EXPECT_EQ(StrategyLowerOptions(ParseStrategy("pp=2,mb=2")).schedule, Schedule::kOneFOneB);
  EXPECT_EQ(StrategyLowerOptions(ParseStrategy("pp=2,mb=2,schedule=gpipe")).schedule,
            Schedule::kGPipe);
  EXPECT_PRED2(Contains, ParseError("pp=2,vp=2,mb=2,schedule=zb-h1"), "schedule=zb-h1");
  EXPECT_PRED2(Contains, ParseError("schedule=zb"), "must be gpipe, 1f1b or zb-h1, got 'zb'");
}

TEST(StrategyParse, SequenceParallel) {
  EXPECT_FALSE(ParseStrategy("tp=2").sequence_parallel);
  const Strategy sp = ParseStrategy("tp=2,sp=true");
  EXPECT_TRUE(sp.sequence_parallel);
  EXPECT_EQ(sp.ToString(), "dp=1,tp=2,pp=1,mb=1,schedule=1f1b,sp=true");
  EXPECT_EQ(ParseStrategy(sp.ToString()).ToString(), sp.ToString());
  EXPECT_FALSE(ParseStrategy("tp=2,sp=false").sequence_parallel);
  EXPECT_PRED2(Contains, ParseError("tp=2,sp=on"), "'sp' must be true or false, got 'on'");
}

TEST(StrategyPlacement, VirtualStagesCycleOverTheRanks) {
  const Strategy s = ParseStrategy("dp=2,pp=2,vp=2,mb=2");
  EXPECT_EQ(s.StagePlacement(0, 4).ToString(), "cpu:0-1 [2,1]");
  EXPECT_EQ(s.StagePlacement(1, 4).ToString(), "cpu:2-3 [2,1]");
  EXPECT_EQ(s.StagePlacement(2, 4).ToString(), "cpu:0-1 [2,1]");
  EXPECT_EQ(s.StagePlacement(3, 4).ToString(), "cpu:2-3 [2,1]");
}

TEST(StrategyParse, AutoWithHierarchyPrintsIt) {
  Strategy s = ParseStrategy("auto");
  s.hierarchy = Shape{2, 4};
  EXPECT_PRED2(Contains, s.ToString(), "auto");
  EXPECT_PRED2(Contains, s.ToString(), "[2,4]");
}

TEST(StrategyParse, UnknownKeyNamesIt) {
  const std::string text = ParseError("dp=2,foo=1");
  EXPECT_PRED2(Contains, text, "'foo'");
}

TEST(StrategyParse, ZeroNamesTheField) {
  const std::string text = ParseError("dp=2,tp=0");
  EXPECT_PRED2(Contains, text, "'tp'");
  EXPECT_PRED2(Contains, text, "'0'");
  EXPECT_PRED2(Contains, ParseError("mb=0"), "'mb'");
  EXPECT_PRED2(Contains, ParseError("pp=0"), "'pp'");
}

TEST(StrategyParse, NegativeNamesTheField) {
  const std::string text = ParseError("pp=-2");
  EXPECT_PRED2(Contains, text, "'pp'");
  EXPECT_PRED2(Contains, text, "-2");
}

TEST(StrategyParse, NonNumberNamesTheField) {
  EXPECT_PRED2(Contains, ParseError("dp=x"), "'dp'");
  EXPECT_PRED2(Contains, ParseError("dp=x"), "'x'");
  EXPECT_PRED2(Contains, ParseError("dp=2x"), "'2x'");
  EXPECT_PRED2(Contains, ParseError("dp=1.5"), "'dp'");
  EXPECT_PRED2(Contains, ParseError("tp="), "'tp'");
  EXPECT_PRED2(Contains, ParseError("mb=99999999999999999999"), "'mb'");
}

TEST(StrategyParse, RepeatedKeyNamesIt) {
  const std::string text = ParseError("dp=2,tp=2,dp=4");
  EXPECT_PRED2(Contains, text, "'dp'");
  EXPECT_PRED2(Contains, text, "twice");
  EXPECT_PRED2(Contains, ParseError("schedule=gpipe,schedule=gpipe"), "'schedule'");
}

TEST(StrategyParse, BadScheduleNamesIt) {
  const std::string text = ParseError("dp=2,schedule=zigzag");
  EXPECT_PRED2(Contains, text, "'schedule'");
  EXPECT_PRED2(Contains, text, "'zigzag'");
}

TEST(StrategyParse, MissingEqualsNamesTheItem) {
  const std::string text = ParseError("dp=2,tp4");
  EXPECT_PRED2(Contains, text, "'tp4'");
  EXPECT_PRED2(Contains, text, "key=value");
  EXPECT_PRED2(Contains, ParseError("dp"), "'dp'");
}

TEST(StrategyParse, EmptyAndStrayCommasAreErrors) {
  EXPECT_PRED2(Contains, ParseError(""), "empty");
  ParseError("dp=2,");
  ParseError(",dp=2");
  ParseError("dp=2,,tp=2");
  ParseError("auto,dp=2");
  ParseError("AUTO");
}

TEST(StrategyDevices, MatchingCountPasses) {
  ParseStrategy("dp=2,tp=2,pp=2").CheckDevices(8);
  ParseStrategy("dp=1").CheckDevices(1);
  ParseStrategy("auto").CheckDevices(5);
  Strategy s = ParseStrategy("auto");
  s.hierarchy = Shape{2, 4};
  s.CheckDevices(8);
}

TEST(StrategyDevices, MismatchNamesBothCounts) {
  const Strategy s = ParseStrategy("dp=2,tp=2");
  const std::string text = InvalidArgumentText([&] { s.CheckDevices(8); });
  EXPECT_PRED2(Contains, text, "dp*tp*pp = 4");
  EXPECT_PRED2(Contains, text, "there are 8");
}

TEST(StrategyDevices, AutoHierarchyMismatchNamesIt) {
  Strategy s = ParseStrategy("auto");
  s.hierarchy = Shape{2, 2};
  const std::string text = InvalidArgumentText([&] { s.CheckDevices(8); });
  EXPECT_PRED2(Contains, text, "[2,2]");
  EXPECT_PRED2(Contains, text, "8");
}

TEST(StrategyDevices, NonPositiveDeviceCount) {
  EXPECT_PRED2(Contains, InvalidArgumentText([] { ParseStrategy("auto").CheckDevices(0); }),
               "devices");
  EXPECT_PRED2(Contains, InvalidArgumentText([] { ParseStrategy("dp=1").CheckDevices(-1); }),
               "devices");
}

TEST(StrategyDegrees, AMissingDpIsInferredFromTheDevices) {
  Strategy s = ParseStrategy("tp=2");
  EXPECT_TRUE(s.InfersDegree());
  EXPECT_EQ(s.DefaultDevices(), 2);
  s.Resolve(8);
  EXPECT_EQ(s.dp, 4);
  EXPECT_EQ(s.tp, 2);
  EXPECT_EQ(s.devices(), 8);
  s.Resolve(8);  // idempotent
  EXPECT_EQ(s.dp, 4);
  EXPECT_EQ(ParseStrategy("pp=2,tp=2").Resolved(12).dp, 3);
  EXPECT_EQ(ParseStrategy("mb=4").Resolved(3).dp, 3);
}

TEST(StrategyDegrees, GivenDegreesAreChecked) {
  Strategy s = ParseStrategy("dp=2,tp=2");
  EXPECT_FALSE(s.InfersDegree());
  EXPECT_EQ(s.DefaultDevices(), 4);
  const std::string text = InvalidArgumentText([&] { s.Resolve(8); });
  EXPECT_PRED2(Contains, text, "dp*tp*pp = 4");
  EXPECT_PRED2(Contains, text, "there are 8");
}

TEST(StrategyDegrees, AnUninferableDegreeNamesWhy) {
  const std::string text = InvalidArgumentText([] { ParseStrategy("tp=3").Resolve(8); });
  EXPECT_PRED2(Contains, text, "cannot infer dp");
  EXPECT_PRED2(Contains, text, "8 devices");
  EXPECT_PRED2(Contains, text, "tp*pp = 3");
}

TEST(StrategyDegrees, AutoDegreesAreInferredAndLeaveTheirAxisToTheSearch) {
  Strategy tp = ParseStrategy("dp=2,tp=auto");
  EXPECT_TRUE(tp.InfersDegree());
  tp.Resolve(8);
  EXPECT_EQ(tp.tp, 4);
  EXPECT_EQ(tp.SearchedAxes(), std::vector<int>{1});
  EXPECT_EQ(tp.ToString(), "dp=2,tp=auto,pp=1,mb=1,schedule=1f1b");
  Strategy dp = ParseStrategy("dp=auto,tp=2");
  dp.Resolve(8);
  EXPECT_EQ(dp.dp, 4);
  EXPECT_EQ(dp.SearchedAxes(), std::vector<int>{0});
  Strategy alone = ParseStrategy("tp=auto");  // dp omitted: 1, tp takes the devices
  alone.Resolve(4);
  EXPECT_EQ(alone.dp, 1);
  EXPECT_EQ(alone.tp, 4);
  EXPECT_TRUE(ParseStrategy("dp=2,tp=2").SearchedAxes().empty());
}

TEST(StrategyDegrees, PpAutoAndTwoAutoDegreesAreRefused) {
  EXPECT_PRED2(Contains, ParseError("pp=auto"), "'pp' cannot be auto");
  EXPECT_PRED2(Contains, ParseError("dp=auto,tp=auto"), "both auto");
}

TEST(StrategyPlacement, PipelineStagesTakeConsecutiveGroups) {
  const Strategy s = ParseStrategy("dp=2,tp=2,pp=3");
  for (int64_t stage = 0; stage < 3; ++stage) {
    const sbp::Placement p = s.StagePlacement(stage, 12);
    EXPECT_EQ(p.device_type(), DeviceType::kCpu);
    EXPECT_EQ(p.hierarchy(), (Shape{2, 2}));
    std::vector<int64_t> expected;
    for (int64_t d = 0; d < 4; ++d) expected.push_back(stage * 4 + d);
    EXPECT_EQ(p.device_ids(), expected) << "stage " << stage;
  }
  EXPECT_EQ(s.StagePlacement(1, 12).ToString(), "cpu:4-7 [2,2]");
}

TEST(StrategyPlacement, StagesAreDisjointAndCoverAllDevices) {
  const Strategy s = ParseStrategy("dp=2,tp=4,pp=4");
  std::vector<int> seen(32, 0);
  for (int64_t stage = 0; stage < 4; ++stage) {
    const sbp::Placement placement = s.StagePlacement(stage, 32);
    for (int64_t id : placement.device_ids()) ++seen.at(id);
  }
  for (int64_t id = 0; id < 32; ++id) EXPECT_EQ(seen[id], 1) << "device " << id;
}

TEST(StrategyPlacement, OneStageIsDpByTp) {
  const Strategy s = ParseStrategy("dp=2,tp=4");
  const sbp::Placement p = s.StagePlacement(0, 8);
  EXPECT_EQ(p.hierarchy(), (Shape{2, 4}));
  EXPECT_EQ(p.size(), 8);
  EXPECT_EQ(p.ToString(), "cpu:0-7 [2,4]");
}

TEST(StrategyPlacement, AutoUsesTheHierarchyOrOneAxis) {
  Strategy s = ParseStrategy("auto");
  EXPECT_EQ(s.StagePlacement(0, 8).hierarchy(), (Shape{8}));
  s.hierarchy = Shape{2, 4};
  const sbp::Placement p = s.StagePlacement(0, 8);
  EXPECT_EQ(p.hierarchy(), (Shape{2, 4}));
  EXPECT_EQ(p.size(), 8);
}

TEST(StrategyPlacement, DeviceTypeIsPassedThrough) {
  const Strategy s = ParseStrategy("dp=2");
  EXPECT_EQ(s.StagePlacement(0, 2, DeviceType::kCuda).device_type(), DeviceType::kCuda);
}

TEST(StageOf, BalancedAndInOrder) {
  for (int64_t layers : {1, 2, 3, 5, 8, 13, 96}) {
    for (int64_t stages = 1; stages <= layers; ++stages) {
      std::vector<int64_t> count(stages, 0);
      int64_t previous = 0;
      for (int64_t layer = 0; layer < layers; ++layer) {
        const int64_t stage = StageOf(layer, layers, stages);
        ASSERT_GE(stage, 0);
        ASSERT_LT(stage, stages);
        EXPECT_GE(stage, previous) << layers << " layers, " << stages << " stages";
        EXPECT_LE(stage, previous + 1);
        previous = stage;
        ++count[stage];
      }
      EXPECT_EQ(StageOf(0, layers, stages), 0);
      EXPECT_EQ(StageOf(layers - 1, layers, stages), stages - 1);
      // Every stage has floor or ceil of layers / stages.
      for (int64_t c : count) {
        EXPECT_GE(c, layers / stages) << layers << " layers, " << stages << " stages";
        EXPECT_LE(c, (layers + stages - 1) / stages)
            << layers << " layers, " << stages << " stages";
      }
    }
  }
}

TEST(StageOf, Examples) {
  EXPECT_EQ(StageOf(0, 2, 2), 0);
  EXPECT_EQ(StageOf(1, 2, 2), 1);
  EXPECT_EQ(StageOf(47, 96, 16), 7);
  EXPECT_EQ(StageOf(95, 96, 16), 15);
  EXPECT_EQ(StageOf(5, 6, 1), 0);
}

}  // namespace
}  // namespace twinflow::models
