// The backend choice before a multi-process run (engine/comm/comm_backend.h), the GPU each
// device takes (engine/runtime/device_place.h) and the NCCL channels of a Plan
// (engine/comm/nccl_channels.h).
#include "engine/comm/comm_backend.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "engine/comm/nccl_channels.h"
#include "engine/compiler/compile.h"
#include "engine/core/error.h"
#include "engine/ops/builtin_ops.h"
#include "engine/runtime/device_place.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "models/model.h"
#include "planner/lower_options.h"
#include "tests/support/tiny_gpt.h"

namespace twinflow::comm {
namespace {

TEST(CommBackend, CpuDevicesTakeMpi) {
  EXPECT_EQ(ChooseBackend({{"a", {}}, {"a", {}}}, false, true).backend, CommBackend::kMpi);
}

TEST(CommBackend, OneGpuPerRankTakesNcclWhereTheBuildHasIt) {
  const std::vector<RankGpus> ranks = {{"a", {"0000:1b:00.0"}},
                                       {"a", {"0000:1c:00.0"}},
                                       {"b", {"0000:1b:00.0"}}};  // same bus id, another host
  EXPECT_EQ(ChooseBackend(ranks, true, true).backend, CommBackend::kNccl);
  const BackendChoice without = ChooseBackend(ranks, true, false);
  EXPECT_EQ(without.backend, CommBackend::kHostStaging);
  EXPECT_NE(without.reason.find("no NCCL"), std::string::npos) << without.reason;
}

TEST(CommBackend, RanksSharingAGpuFallBackToHostStagingAndSaySo) {
  const BackendChoice c =
      ChooseBackend({{"a", {"0000:1b:00.0"}}, {"a", {"0000:1b:00.0"}}}, true, true);
  EXPECT_EQ(c.backend, CommBackend::kHostStaging);
  EXPECT_EQ(c.reason,
            "ranks 0 and 1 share GPU 0000:1b:00.0 of host a: NCCL needs a GPU of its own");
  const BackendChoice inside =
      ChooseBackend({{"a", {"g0", "g0"}}, {"b", {"g1", "g2"}}}, true, true);
  EXPECT_EQ(inside.backend, CommBackend::kHostStaging);
  EXPECT_NE(inside.reason.find("devices 0 and 1 of rank 0 share GPU g0"), std::string::npos);
  const BackendChoice several =
      ChooseBackend({{"a", {"g0", "g1"}}, {"b", {"g0", "g1"}}}, true, true);
  EXPECT_EQ(several.backend, CommBackend::kHostStaging);
  EXPECT_NE(several.reason.find("rank 0 has 2 devices"), std::string::npos) << several.reason;
  const BackendChoice blind = ChooseBackend({{"a", {"g0"}}, {"b", {}}}, true, true);
  EXPECT_EQ(blind.reason, "rank 1 sees no GPU");
}

TEST(CommBackend, RankLinesRoundTrip) {
  const RankGpus rank{"node-3", {"0000:1b:00.0", "0000:1c:00.0"}};
  const RankGpus back = DecodeRankGpus(EncodeRankGpus(rank));
  EXPECT_EQ(back.host, rank.host);
  EXPECT_EQ(back.gpus, rank.gpus);
  EXPECT_THROW(DecodeRankGpus(""), CommError);
}

TEST(DevicePlace, EachLocalRankTakesItsOwnGpusWhileThereAreEnough) {
  for (int64_t per_rank : {1, 2, 4}) {
    const int gpus = 8;
    std::set<int> taken;
    for (int local = 0; local < gpus / per_rank; ++local) {
      for (int64_t slot = 0; slot < per_rank; ++slot) {
        EXPECT_TRUE(taken.insert(runtime::GpuFor({local, slot, per_rank}, gpus)).second);
      }
    }
    EXPECT_EQ(taken.size(), 8u);
  }
  // One rank: logical device i on GPU i % count, as in-process runs always did.
  EXPECT_EQ(runtime::GpuFor({0, 5, 6}, 4), 1);
  // More ranks than GPUs wrap around (and then share, which the backend choice sees).
  EXPECT_EQ(runtime::GpuFor({1, 0, 1}, 1), 0);
}

plan::Plan TinyPlan(const std::string& strategy, int64_t devices_per_rank) {
  static const graph::OpRegistry ops = ops::BuiltinOps();
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy(strategy);
  options.devices = 4;
  const models::BuiltModel model = models::BuildGpt(ops, testing::TinyGptConfig(), options);
  compiler::CompileOptions compile;
  compile.lower = planner::StrategyLowerOptions(model.strategy);
  compile.lower.devices_per_rank = devices_per_rank;
  return compiler::Compile(model.graph, ops, sbp::AlphaBetaCostModel(), compile).plan;
}

TEST(NcclChannels, EveryCrossRankTaskHasAChannelOfItsRanksAndRoundsAreDisjoint) {
  for (const std::string strategy : {"dp=2,tp=2", "dp=2,pp=2,mb=2", "tp=4"}) {
    const plan::Plan plan = TinyPlan(strategy, 1);
    const ChannelPlan channels = PlanChannels(plan);
    ASSERT_FALSE(channels.channels.empty()) << strategy;
    for (const plan::Task& t : plan.tasks()) {
      if (t.kind() != plan::COLLECTIVE && t.kind() != plan::SEND && t.kind() != plan::RECV) {
        continue;
      }
      const Channel& c = channels.channels.at(channels.ChannelOf(plan, t));
      const int rank = plan.devices(t.device()).rank();
      EXPECT_NE(std::find(c.ranks.begin(), c.ranks.end(), rank), c.ranks.end()) << t.name();
      if (t.kind() == plan::COLLECTIVE) {  // comm rank = member
        EXPECT_EQ(c.ranks.at(t.collective().member()), rank) << t.name();
      }
    }
    for (int round = 0; round < channels.rounds; ++round) {
      std::set<int> seen;
      for (const Channel& c : channels.channels) {
        if (c.round != round) continue;
        for (int r : c.ranks) EXPECT_TRUE(seen.insert(r).second) << strategy << " round " << round;
      }
    }
  }
}

TEST(DevicePlace, EachRanksDevicesTakeItsSlotsInDeviceOrder) {
  const plan::Plan plan = TinyPlan("tp=4", 2);  // devices 0, 1 on rank 0; 2, 3 on rank 1
  const std::vector<runtime::DevicePlace> places = runtime::DevicePlaces(plan, 1, 1);
  ASSERT_EQ(places.size(), 4u);
  for (int d : {2, 3}) {
    EXPECT_EQ(places[d].local_rank, 1);
    EXPECT_EQ(places[d].slot, d - 2);
    EXPECT_EQ(places[d].count, 2);
  }
  EXPECT_EQ(runtime::GpuFor(places[3], 8), 3);  // local rank 1 takes GPUs 2 and 3
}

TEST(NcclChannels, RefuseTwoMembersOfAGroupOnOneRank) {
  const plan::Plan plan = TinyPlan("tp=4", 2);
  EXPECT_THROW(PlanChannels(plan), PlanError);
}

}  // namespace
}  // namespace twinflow::comm
