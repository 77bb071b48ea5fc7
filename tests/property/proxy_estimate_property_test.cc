// The tuner's proxy estimates (planner/proxy_estimate.h): which candidates get proxies, and
// that the forms read back what they were drawn through: any bilinear step, and per device any
// line of arenas, at the candidate's own layers and micro-batches.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/parallel/strategy.h"
#include "planner/proxy_estimate.h"

namespace twinflow::planner {
namespace {

parallel::Strategy Candidate(int64_t dp, int64_t pp, int64_t vp, int64_t mb,
                             parallel::Schedule schedule) {
  parallel::Strategy s;
  s.automatic = false;
  s.dp = dp;
  s.pp = pp;
  s.virtual_stages = vp;
  s.micro_batches = mb;
  s.schedule = schedule;
  return s;
}

TEST(ProxyEstimate, ProxiesOnlyWhereTheyAreSmaller) {
  using parallel::Schedule;
  // 32 layers, one stage, 16 micro-batches: 1 and 2 layers, 2 and 3 micro-batches.
  const ProxyPlan plain = PlanProxies(Candidate(32, 1, 1, 16, Schedule::kOneFOneB), 32, 512);
  ASSERT_TRUE(plain.usable);
  EXPECT_EQ(plain.layers_per_chunk, 32);
  EXPECT_EQ(plain.m, (std::array<int64_t, 2>{2, 3}));
  EXPECT_EQ(plain.Extent(1, 1).layers, 2);
  EXPECT_EQ(plain.Extent(1, 1).batch, 32 * 3);  // the candidate's micro-batch size (1), 3 of them
  // 2 stages of 2 chunks: 4 chunks, the proxies 4 and 8 layers, 2 and 4 micro-batches.
  const ProxyPlan staged = PlanProxies(Candidate(8, 2, 2, 32, Schedule::kOneFOneB), 32, 512);
  ASSERT_TRUE(staged.usable);
  EXPECT_EQ(staged.Extent(0, 0).layers, 4);
  EXPECT_EQ(staged.Extent(1, 0).layers, 8);
  EXPECT_EQ(staged.m, (std::array<int64_t, 2>{2, 4}));
  EXPECT_EQ(staged.Strategy(Candidate(8, 2, 2, 32, Schedule::kOneFOneB), 1).micro_batches, 4);
  // GPipe holds every micro-batch: its arena is read at the candidate's own count.
  EXPECT_EQ(PlanProxies(Candidate(8, 2, 1, 32, Schedule::kGPipe), 32, 512).m[1], 32);
  EXPECT_FALSE(PlanProxies(Candidate(8, 2, 1, 4, Schedule::kOneFOneB), 32, 512).usable);   // m2
  EXPECT_FALSE(PlanProxies(Candidate(8, 4, 4, 32, Schedule::kOneFOneB), 32, 512).usable);  // K=2
  EXPECT_FALSE(PlanProxies(Candidate(8, 3, 1, 32, Schedule::kOneFOneB), 32, 512).usable);  // 32/3
  parallel::Strategy automatic = Candidate(8, 1, 1, 16, Schedule::kOneFOneB);
  automatic.automatic = true;
  EXPECT_FALSE(PlanProxies(automatic, 32, 512).usable);
}

RC_GTEST_PROP(ProxyEstimate, TheFormsReadBackWhatTheyWereDrawnThrough, ()) {
  const int64_t pp = *rc::gen::inRange<int64_t>(1, 5);
  const int64_t vp = pp > 1 ? *rc::gen::inRange<int64_t>(1, 3) : 1;
  const int64_t per_chunk = *rc::gen::inRange<int64_t>(3, 20);
  const int64_t mb = pp * *rc::gen::inRange<int64_t>(4, 12);
  const ProxyPlan plan = PlanProxies(Candidate(2, pp, vp, mb, parallel::Schedule::kOneFOneB),
                                     per_chunk * pp * vp, 2 * mb * 4);
  RC_ASSERT(plan.usable);
  // A step a + b k + c m + d k m, drawn through the four proxies.
  const double a = *rc::gen::inRange(0, 1000) / 10.0, b = *rc::gen::inRange(0, 1000) / 100.0;
  const double c = *rc::gen::inRange(0, 1000) / 100.0, d = *rc::gen::inRange(0, 1000) / 1000.0;
  const auto form = [&](double k, double m) { return a + b * k + c * m + d * k * m; };
  ProxyValues step{};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      step[i][j] = form(static_cast<double>(plan.k[i]), static_cast<double>(plan.m[j]));
    }
  }
  const double want = form(static_cast<double>(per_chunk), static_cast<double>(mb));
  RC_ASSERT(std::abs(Bilinear(plan, step, mb) - want) <= 1e-9 * std::max(1.0, want));
  // Arenas: a line per device; the estimate is the largest device's at K.
  const int devices = *rc::gen::inRange(1, 6);
  std::vector<int64_t> at_k1, at_k2;
  int64_t largest = 0;
  for (int dev = 0; dev < devices; ++dev) {
    const int64_t fixed = *rc::gen::inRange<int64_t>(0, 1 << 30);
    const int64_t per_layer = *rc::gen::inRange<int64_t>(0, 1 << 26);
    at_k1.push_back(fixed + per_layer * plan.k[0]);
    at_k2.push_back(fixed + per_layer * plan.k[1]);
    largest = std::max(largest, fixed + per_layer * per_chunk);
  }
  RC_ASSERT(std::llabs(EstimatedArena(plan, at_k1, at_k2) - largest) <= 1);
}

TEST(ProxyEstimate, OnlyAClearArenaDecides) {
  const int64_t usable = int64_t{80} << 30;
  EXPECT_EQ(CallArena(usable / 2, usable), ArenaCall::kFits);
  EXPECT_EQ(CallArena(usable, usable), ArenaCall::kUnsure);  // the packing adds a few percent
  EXPECT_EQ(CallArena(usable * 102 / 100, usable), ArenaCall::kUnsure);
  EXPECT_EQ(CallArena(usable * 11 / 10, usable), ArenaCall::kOutOfMemory);
}

}  // namespace
}  // namespace twinflow::planner
