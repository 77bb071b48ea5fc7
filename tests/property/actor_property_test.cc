// Properties of the Actor state machine (engine/runtime/actor.h) over random valid Plans
// (tests/support/random_plan.h) driven by the test executor with random delivery orders: every
// run terminates, every actor acts exactly as often as the rates say, consumers see each
// register's pieces in order and exactly once, no slot is overwritten while read, the same
// seed gives the same run, and Plans with too few slots for a lag are reported as deadlocks.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/rng.h"
#include "engine/runtime/test_executor.h"
#include "tests/support/random_plan.h"
#include "tests/support/token_sim.h"

namespace twinflow::runtime {
namespace {

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max() / 4;

int64_t Rate(const plan::Task& task) {
  if (task.kind() == plan::ACC) return task.acc_count();
  if (task.kind() == plan::REPEAT) return task.repeat_count();
  return 1;
}

// Acts per task from the rates alone: a source acts `pieces` times; any other task acts as
// long as every consumed register can supply the piece it needs (register r with lag L and N
// pieces allows N + L input pieces; a REPEAT acts repeat_count times per input piece). Loops
// make this a fixed point, reached by lowering from "unbounded".
std::vector<int64_t> ExpectedActs(const plan::Plan& plan, const SourcePiecesFn& pieces) {
  const int n = plan.tasks_size();
  std::vector<int64_t> acts(static_cast<size_t>(n), kUnbounded);
  auto produced = [&](int64_t task) {
    const plan::Task& t = plan.tasks(static_cast<int>(task));
    return t.kind() == plan::ACC ? acts[static_cast<size_t>(task)] / Rate(t)
                                 : acts[static_cast<size_t>(task)];
  };
  for (int round = 0; round <= n + 1; ++round) {
    for (int i = 0; i < n; ++i) {
      const plan::Task& t = plan.tasks(i);
      const bool source = t.kind() == plan::SOURCE || t.kind() == plan::VARIABLE;
      int64_t a = source ? pieces(i) : kUnbounded;
      for (int64_t r : t.consumed_regsts()) {
        const plan::Regst& regst = plan.regsts(static_cast<int>(r));
        const int64_t inputs = std::min(kUnbounded, produced(regst.producer()) + regst.lag());
        a = std::min(a, t.kind() == plan::REPEAT ? inputs * Rate(t) : inputs);
      }
      acts[static_cast<size_t>(i)] = std::min(a, kUnbounded);
    }
  }
  return acts;
}

// How many pieces of consumed register `r` task `t` reads in `acts` acts.
int64_t PiecesRead(const plan::Plan& plan, int64_t t, int64_t r, int64_t acts) {
  const plan::Task& task = plan.tasks(static_cast<int>(t));
  const int64_t inputs = task.kind() == plan::REPEAT ? acts / Rate(task) : acts;
  return std::max<int64_t>(0, inputs - plan.regsts(static_cast<int>(r)).lag());
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

struct Features {
  bool acc = false, repeat = false, lag = false, multi_slot = false;
  explicit Features(const plan::Plan& plan) {
    for (const plan::Task& t : plan.tasks()) {
      acc = acc || t.kind() == plan::ACC;
      repeat = repeat || t.kind() == plan::REPEAT;
    }
    for (const plan::Regst& regst : plan.regsts()) {
      lag = lag || regst.lag() > 0;
      multi_slot = multi_slot || regst.slots() > 1;
    }
  }
};

struct Drawn {
  plan::Plan plan;
  int64_t steps = 1;
};

// Most draws insist on a rate change or a lag, which plain draws of RandomPlan often lack.
Drawn DrawPlan() {
  Rng rng(*rc::gen::arbitrary<uint64_t>());
  testing::RandomPlanOptions options;
  options.max_tasks = *rc::gen::inRange(3, 20);
  options.max_slots = *rc::gen::inRange(1, 4);
  options.rate_changes = *rc::gen::inRange(0, 5) != 0;
  options.lags = *rc::gen::inRange(0, 5) != 0;
  const bool rich = *rc::gen::inRange(0, 4) != 0 && (options.rate_changes || options.lags);
  Drawn d{testing::RandomPlan(rng, options), *rc::gen::inRange<int64_t>(1, 4)};
  for (int attempt = 0; rich && attempt < 50; ++attempt) {
    const Features f(d.plan);
    if ((options.rate_changes && (f.acc || f.repeat)) || (options.lags && f.lag)) break;
    d.plan = testing::RandomPlan(rng, options);
  }
  return d;
}

RC_GTEST_PROP(ActorProperty, RandomPlansTerminateWithTheExpectedActsAndPieceOrder, ()) {
  const Drawn d = DrawPlan();
  const plan::Plan& plan = d.plan;
  const int64_t steps = d.steps;
  const SourcePiecesFn pieces = [&](int64_t t) { return testing::SourcePieces(plan, t, steps); };
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const TestRunResult r = RunWithRandomDelivery(plan, pieces, seed);
  RC_ASSERT(r.finished);
  RC_ASSERT(!r.deadlocked);
  RC_ASSERT(r.report.empty());
  RC_ASSERT(r.violations.empty());
  const std::vector<int64_t> expected = ExpectedActs(plan, pieces);
  RC_ASSERT(r.acts == expected);
  for (int t = 0; t < plan.tasks_size(); ++t) {
    RC_ASSERT(r.pieces_seen[static_cast<size_t>(t)] == Iota(expected[static_cast<size_t>(t)]));
    for (int64_t regst : plan.tasks(t).consumed_regsts()) {
      const int64_t n = PiecesRead(plan, t, regst, expected[static_cast<size_t>(t)]);
      auto it = r.inputs_seen.find({t, regst});
      const std::vector<int64_t> seen =
          it == r.inputs_seen.end() ? std::vector<int64_t>{} : it->second;
      RC_ASSERT(seen == Iota(n));
    }
  }
  // Output slots follow the ring.
  for (const Launch& l : r.launches) {
    for (const SlotRef& o : l.outputs) {
      RC_ASSERT(o.slot == o.piece % plan.regsts(static_cast<int>(o.regst)).slots());
    }
  }
  const Features f(plan);
  RC_TAG(plan.tasks_size() >= 8 ? "8+ tasks" : "<8 tasks", f.acc || f.repeat ? "rates" : "",
         f.lag ? "lag" : "", f.multi_slot ? "slots>1" : "1 slot");
}

RC_GTEST_PROP(ActorProperty, InOrderDeliveryAgreesWithTheTokenOracle, ()) {
  const Drawn d = DrawPlan();
  const SourcePiecesFn pieces = [&](int64_t t) {
    return testing::SourcePieces(d.plan, t, d.steps);
  };
  const TestRunResult r = RunActors(d.plan, pieces, TestRunOptions{0, /*in_order=*/true});
  RC_ASSERT(testing::SimulateTokens(d.plan, d.steps).empty());
  RC_ASSERT(r.finished);
  RC_ASSERT(r.violations.empty());
  RC_ASSERT(r.acts == ExpectedActs(d.plan, pieces));
}

RC_GTEST_PROP(ActorProperty, TheSameSeedGivesTheSameLaunches, ()) {
  const Drawn d = DrawPlan();
  const SourcePiecesFn pieces = [&](int64_t t) {
    return testing::SourcePieces(d.plan, t, d.steps);
  };
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const TestRunResult a = RunWithRandomDelivery(d.plan, pieces, seed);
  const TestRunResult b = RunWithRandomDelivery(d.plan, pieces, seed);
  RC_ASSERT(a.launches.size() == b.launches.size());
  RC_ASSERT(a.events == b.events);
  for (size_t i = 0; i < a.launches.size(); ++i) {
    const Launch& x = a.launches[i];
    const Launch& y = b.launches[i];
    RC_ASSERT(x.task == y.task && x.piece == y.piece && x.first == y.first && x.last == y.last);
    RC_ASSERT(x.inputs.size() == y.inputs.size() && x.outputs.size() == y.outputs.size());
    for (size_t k = 0; k < x.inputs.size(); ++k) {
      RC_ASSERT(x.inputs[k].slot == y.inputs[k].slot && x.inputs[k].piece == y.inputs[k].piece);
    }
    for (size_t k = 0; k < x.outputs.size(); ++k) {
      RC_ASSERT(x.outputs[k].slot == y.outputs[k].slot);
    }
  }
}

// data feeds join along a chain of computes (register slots drawn at random) and along one
// direct register with lag L and s slots. join's act p needs the direct piece p - L, so data's
// act q needs join's act q - s + L done, which needs data's piece q - s + L: with s <= L data
// waits on itself once it has filled all s slots, i.e. the Plan deadlocks iff pieces > s.
RC_GTEST_PROP(ActorProperty, TooFewSlotsForALagIsReportedAsADeadlock, ()) {
  const int64_t pieces = *rc::gen::inRange<int64_t>(1, 8);
  const int slots = *rc::gen::inRange(1, 4);
  const int lag = *rc::gen::inRange(1, 5);
  const int chain = *rc::gen::inRange(0, 3);
  plan::Plan plan;
  auto add_task = [&](plan::TaskKind kind, const std::string& name) {
    plan::Task* t = plan.add_tasks();
    t->set_id(plan.tasks_size() - 1);
    t->set_kind(kind);
    t->set_name(name);
    return t->id();
  };
  auto add_regst = [&](int64_t producer, int64_t consumer, int s, int l) {
    plan::Regst* r = plan.add_regsts();
    r->set_id(plan.regsts_size() - 1);
    r->set_producer(producer);
    r->add_consumers(consumer);
    r->set_slots(s);
    r->set_lag(l);
    plan.mutable_tasks(static_cast<int>(producer))->add_produced_regsts(r->id());
    plan.mutable_tasks(static_cast<int>(consumer))->add_consumed_regsts(r->id());
  };
  const int64_t data = add_task(plan::SOURCE, "data@0");
  std::vector<int64_t> path = {data};
  for (int i = 0; i < chain; ++i) path.push_back(add_task(plan::COMPUTE, "op" + std::to_string(i)));
  const int64_t join = add_task(plan::COMPUTE, "join@0");
  path.push_back(join);
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    add_regst(path[i], path[i + 1], *rc::gen::inRange(1, 4), 0);
  }
  add_regst(data, join, slots, lag);
  const int64_t lagged = plan.regsts_size() - 1;
  plan.set_pieces_per_step(pieces);

  const bool expect_deadlock = pieces > slots && slots <= lag;
  RC_ASSERT(testing::SimulateTokens(plan, 1).empty() == !expect_deadlock);
  const TestRunResult r = RunWithRandomDelivery(plan, 1, *rc::gen::arbitrary<uint64_t>());
  RC_ASSERT(r.violations.empty());
  RC_ASSERT(r.deadlocked == expect_deadlock);
  RC_ASSERT(r.finished == !expect_deadlock);
  if (expect_deadlock) {
    RC_ASSERT(r.acts[static_cast<size_t>(data)] == slots);
    const std::string held =
        "data@0 output regst " + std::to_string(lagged) + " has no free slot (held by join@0)";
    RC_ASSERT(r.report.find(held) != std::string::npos);
    RC_ASSERT(r.report.find("join@0 waits for regst") != std::string::npos);
  }
  RC_TAG(expect_deadlock ? "deadlock" : "runs");
}

}  // namespace
}  // namespace twinflow::runtime
