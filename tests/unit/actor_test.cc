// engine/runtime/actor: the pure Actor state machine on small hand-built Plans, driven by the
// test executor (in order and at random) and directly, message by message.
#include "engine/runtime/actor.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/test_executor.h"

namespace twinflow::runtime {
namespace {

// Builds a Plan by hand: ids are indices, producers and consumers kept consistent.
struct PlanBuilder {
  plan::Plan plan;

  int64_t Task(plan::TaskKind kind, const std::string& name, int64_t rate = 0) {
    plan::Task* t = plan.add_tasks();
    t->set_id(plan.tasks_size() - 1);
    t->set_kind(kind);
    t->set_name(name);
    if (kind == plan::ACC) t->set_acc_count(rate);
    if (kind == plan::REPEAT) t->set_repeat_count(rate);
    return t->id();
  }
  // A data register (one float), or with `control` a control register (no tensor).
  int64_t Regst(int64_t producer, std::vector<int64_t> consumers, int slots, int lag = 0,
                bool control = false) {
    plan::Regst* r = plan.add_regsts();
    r->set_id(plan.regsts_size() - 1);
    r->set_producer(producer);
    r->set_slots(slots);
    r->set_lag(lag);
    if (!control) {
      r->mutable_tensor()->set_dtype(plan::DTYPE_F32);
      r->mutable_tensor()->add_shape(1);
      r->set_bytes_per_slot(4);
    }
    plan.mutable_tasks(static_cast<int>(producer))->add_produced_regsts(r->id());
    for (int64_t c : consumers) {
      r->add_consumers(c);
      plan.mutable_tasks(static_cast<int>(c))->add_consumed_regsts(r->id());
    }
    return r->id();
  }
};

SourcePiecesFn Pieces(int64_t n) {
  return [n](int64_t) { return n; };
}

TestRunResult InOrder(const plan::Plan& plan, int64_t pieces) {
  return RunActors(plan, Pieces(pieces), TestRunOptions{0, /*in_order=*/true});
}

// "name:piece" per launch, for readable comparisons.
std::vector<std::string> Order(const plan::Plan& plan, const TestRunResult& r) {
  std::vector<std::string> order;
  for (const Launch& l : r.launches) {
    order.push_back(plan.tasks(static_cast<int>(l.task)).name() + ":" + std::to_string(l.piece));
  }
  return order;
}

plan::Plan Chain(int slots) {
  PlanBuilder b;
  const int64_t s = b.Task(plan::SOURCE, "s");
  const int64_t c = b.Task(plan::COMPUTE, "c");
  const int64_t k = b.Task(plan::SINK, "k");
  b.Regst(s, {c}, slots);
  b.Regst(c, {k}, slots);
  return b.plan;
}

TEST(ActorTest, ChainWithOneSlotRunsInLockstep) {
  const plan::Plan plan = Chain(1);
  const TestRunResult r = InOrder(plan, 3);
  ASSERT_TRUE(r.finished) << r.report;
  // c returns slot 0 of s before it announces its output, so s:1 goes before k:0.
  EXPECT_EQ(Order(plan, r), (std::vector<std::string>{"s:0", "c:0", "s:1", "k:0", "c:1", "s:2",
                                                      "k:1", "c:2", "k:2"}));
  EXPECT_EQ(r.acts, (std::vector<int64_t>{3, 3, 3}));
}

TEST(ActorTest, ChainWithTwoSlotsLetsTheSourceRunAhead) {
  const plan::Plan plan = Chain(2);
  const TestRunResult r = InOrder(plan, 3);
  ASSERT_TRUE(r.finished) << r.report;
  // s:1 goes before c:0 (one piece ahead), but s:2 waits for c:0 to return slot 0.
  EXPECT_EQ(Order(plan, r), (std::vector<std::string>{"s:0", "s:1", "c:0", "c:1", "s:2", "k:0",
                                                      "k:1", "c:2", "k:2"}));
  EXPECT_EQ(r.launches[2].inputs.at(0).slot, 0);
  EXPECT_EQ(r.launches[3].inputs.at(0).slot, 1);
  EXPECT_EQ(r.launches[4].outputs.at(0).slot, 0);  // the ring comes back to slot 0
}

TEST(ActorTest, ChainUnderRandomDeliveryKeepsPieceOrder) {
  for (int slots = 1; slots <= 3; ++slots) {
    const plan::Plan plan = Chain(slots);
    for (uint64_t seed = 0; seed < 50; ++seed) {
      const TestRunResult r = RunWithRandomDelivery(plan, Pieces(5), seed);
      ASSERT_TRUE(r.finished) << r.report;
      const std::vector<int64_t> all = {0, 1, 2, 3, 4};
      for (const auto& pieces : r.pieces_seen) EXPECT_EQ(pieces, all);
      EXPECT_EQ((r.inputs_seen.at({1, 0})), all);
      EXPECT_EQ((r.inputs_seen.at({2, 1})), all);
    }
  }
}

TEST(ActorTest, PiecesFromPlanUsesMicroBatchesForDataAndStepsForVariables) {
  PlanBuilder b;
  const int64_t s = b.Task(plan::SOURCE, "data");
  const int64_t v = b.Task(plan::VARIABLE, "w");
  const int64_t c = b.Task(plan::COMPUTE, "c");
  b.Regst(s, {c}, 1);
  b.Regst(v, {c}, 1);
  b.plan.set_pieces_per_step(4);
  const SourcePiecesFn pieces = PiecesFromPlan(b.plan, 3);
  EXPECT_EQ(pieces(s), 12);
  EXPECT_EQ(pieces(v), 3);
  const TestRunResult r = RunWithRandomDelivery(b.plan, 3, 7);
  ASSERT_TRUE(r.finished) << r.report;
  EXPECT_EQ(r.acts, (std::vector<int64_t>{12, 3, 3}));  // c stops with the variable
}

TEST(ActorTest, AccProducesOnePiecePerAccCount) {
  PlanBuilder b;
  const int64_t s = b.Task(plan::SOURCE, "s");
  const int64_t a = b.Task(plan::ACC, "acc", 3);
  const int64_t k = b.Task(plan::SINK, "k");
  b.Regst(s, {a}, 1);
  b.Regst(a, {k}, 1);
  const TestRunResult r = InOrder(b.plan, 6);
  ASSERT_TRUE(r.finished) << r.report;
  EXPECT_EQ(r.acts, (std::vector<int64_t>{6, 6, 2}));
  std::vector<bool> first, last;
  std::vector<int64_t> out_pieces;
  for (const Launch& l : r.launches) {
    if (l.task != a) continue;
    first.push_back(l.first);
    last.push_back(l.last);
    out_pieces.push_back(l.outputs.at(0).piece);
    EXPECT_EQ(l.outputs.at(0).slot, 0);
  }
  EXPECT_EQ(first, (std::vector<bool>{true, false, false, true, false, false}));
  EXPECT_EQ(last, (std::vector<bool>{false, false, true, false, false, true}));
  EXPECT_EQ(out_pieces, (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ((r.inputs_seen.at({k, 1})), (std::vector<int64_t>{0, 1}));
  for (uint64_t seed = 0; seed < 30; ++seed) {
    EXPECT_TRUE(RunWithRandomDelivery(b.plan, Pieces(6), seed).finished);
  }
}

// An ACC in a chain (compiler/task_chains.h): its control output carries a piece every act, so
// the chain's next task follows each act, while its data output still carries one per step.
TEST(ActorTest, AccControlOutputsCarryAPieceEveryAct) {
  PlanBuilder b;
  const int64_t s = b.Task(plan::SOURCE, "s");
  const int64_t a = b.Task(plan::ACC, "acc", 3);
  const int64_t k = b.Task(plan::SINK, "k");
  const int64_t next = b.Task(plan::COMPUTE, "next");
  b.Regst(s, {a, next}, 1);
  b.Regst(a, {k}, 1);
  b.Regst(a, {next}, 1, 0, /*control=*/true);
  const TestRunResult r = InOrder(b.plan, 6);
  ASSERT_TRUE(r.finished) << r.report;
  EXPECT_EQ(r.acts, (std::vector<int64_t>{6, 6, 2, 6}));
  EXPECT_EQ((r.inputs_seen.at({k, 1})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ((r.inputs_seen.at({next, 2})), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  for (size_t i = 0, acc_acts = 0; i < r.launches.size(); ++i) {
    if (r.launches[i].task == a) ++acc_acts;
    if (r.launches[i].task == next) {
      EXPECT_EQ(acc_acts, r.launches[i].piece + 1);
    }
  }
  for (uint64_t seed = 0; seed < 30; ++seed) {
    EXPECT_TRUE(RunWithRandomDelivery(b.plan, Pieces(6), seed).finished);
  }
}

TEST(ActorTest, RepeatHoldsItsInputAndProducesAPiecePerAct) {
  PlanBuilder b;
  const int64_t s = b.Task(plan::SOURCE, "s");
  const int64_t rep = b.Task(plan::REPEAT, "rep", 3);
  const int64_t k = b.Task(plan::SINK, "k");
  b.Regst(s, {rep}, 1);
  b.Regst(rep, {k}, 2);
  const TestRunResult r = InOrder(b.plan, 2);
  ASSERT_TRUE(r.finished) << r.report;
  EXPECT_EQ(r.acts, (std::vector<int64_t>{2, 6, 6}));
  std::vector<int64_t> in_pieces;
  std::vector<bool> first, last;
  size_t last_rep_on_0 = 0, source_1 = 0;
  for (size_t i = 0; i < r.launches.size(); ++i) {
    const Launch& l = r.launches[i];
    if (l.task == s && l.piece == 1) source_1 = i;
    if (l.task != rep) continue;
    in_pieces.push_back(l.inputs.at(0).piece);
    first.push_back(l.first);
    last.push_back(l.last);
    if (l.inputs.at(0).piece == 0) last_rep_on_0 = i;
  }
  EXPECT_EQ(in_pieces, (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(first, (std::vector<bool>{true, false, false, true, false, false}));
  EXPECT_EQ(last, (std::vector<bool>{false, false, true, false, false, true}));
  EXPECT_GT(source_1, last_rep_on_0);  // one slot: the source waits for the last repeat
  EXPECT_EQ((r.inputs_seen.at({k, 1})), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

// forward consumes the data and last step's update (lag 1); update consumes forward's output.
plan::Plan Loop(int loop_slots) {
  PlanBuilder b;
  const int64_t s = b.Task(plan::SOURCE, "data");
  const int64_t f = b.Task(plan::COMPUTE, "forward");
  const int64_t u = b.Task(plan::COMPUTE, "update");
  b.Regst(s, {f}, 2);
  b.Regst(f, {u}, 1);
  b.Regst(u, {f}, loop_slots, /*lag=*/1);
  return b.plan;
}

TEST(ActorTest, LaggedLoopRunsAcrossStepsAndReturnsTheLastPieceUnused) {
  for (int slots = 1; slots <= 2; ++slots) {
    const plan::Plan plan = Loop(slots);
    const TestRunResult r = InOrder(plan, 4);
    ASSERT_TRUE(r.finished) << r.report;
    // data runs one piece ahead (2 slots); forward:1 waits for update:0 (lag 1). The loop's
    // second slot changes nothing here: update:p always waits for forward:p.
    const std::vector<std::string> expected = {"data:0",    "data:1",    "forward:0", "data:2",
                                               "update:0",  "forward:1", "data:3",    "update:1",
                                               "forward:2", "update:2",  "forward:3", "update:3"};
    EXPECT_EQ(Order(plan, r), expected);
    EXPECT_EQ((r.inputs_seen.at({1, 2})), (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(r.launches[2].inputs.size(), 1u);  // forward:0 has no previous update
    EXPECT_EQ(r.launches[5].inputs.size(), 2u);
    for (uint64_t seed = 0; seed < 50; ++seed) {
      const TestRunResult random = RunWithRandomDelivery(plan, Pieces(4), seed);
      ASSERT_TRUE(random.finished) << random.report;
      EXPECT_EQ(random.acts, (std::vector<int64_t>{4, 4, 4}));
    }
  }
}

// Drives one actor by hand: c consumes regst 0 (3 slots) from s, produces regst 1 (2 slots).
struct Single {
  plan::Plan plan;
  Single() {
    PlanBuilder b;
    const int64_t s = b.Task(plan::SOURCE, "s");
    const int64_t c = b.Task(plan::COMPUTE, "c");
    const int64_t k = b.Task(plan::SINK, "k");
    b.Regst(s, {c}, 3);
    b.Regst(c, {k}, 2);
    plan = b.plan;
  }
};

TEST(ActorTest, OutOfOrderMessagesAreBufferedAndConsumedInOrder) {
  Single p;
  Actor c(p.plan, 1, 0);
  Outbox out;
  c.Start(out);
  c.Receive(Eord{0, 3}, out);  // the count arrives before the pieces
  c.Receive(RegstReady{0, 2, 2}, out);
  EXPECT_TRUE(out.launches.empty());
  EXPECT_NE(c.WaitingOn().find("c waits for regst 0 piece 0 (from s)"), std::string::npos)
      << c.WaitingOn();
  c.Receive(RegstReady{0, 0, 0}, out);
  ASSERT_EQ(out.launches.size(), 1u);
  EXPECT_EQ(out.launches[0].piece, 0);
  EXPECT_EQ(out.launches[0].inputs.at(0).slot, 0);
  c.Receive(RegstReady{0, 1, 1}, out);  // busy: buffered
  EXPECT_EQ(out.launches.size(), 1u);
  EXPECT_TRUE(c.busy());
  c.Done(out);
  ASSERT_EQ(out.launches.size(), 2u);
  EXPECT_EQ(out.launches[1].inputs.at(0).piece, 1);
  ASSERT_EQ(out.messages.size(), 2u);  // RegstFree to s, then RegstReady to k
  EXPECT_EQ(out.messages[0].to_task, 0);
  EXPECT_EQ(std::get<RegstFree>(out.messages[0].message).slot, 0);
  EXPECT_EQ(out.messages[1].to_task, 2);
  EXPECT_EQ(std::get<RegstReady>(out.messages[1].message).piece, 0);
  c.Done(out);
  EXPECT_EQ(out.launches.size(), 2u);  // piece 2 needs regst 1 slot 0, still held by k
  EXPECT_NE(c.WaitingOn().find("output regst 1 has no free slot (held by k)"), std::string::npos)
      << c.WaitingOn();
  c.Receive(RegstFree{1, 0}, out);
  ASSERT_EQ(out.launches.size(), 3u);
  EXPECT_EQ(out.launches[2].inputs.at(0).slot, 2);
  out.messages.clear();
  c.Done(out);
  EXPECT_EQ(c.acts(), 3);
  EXPECT_FALSE(c.finished());  // its output slots are still out
  ASSERT_EQ(out.messages.size(), 3u);
  EXPECT_EQ(std::get<Eord>(out.messages[2].message).pieces, 3);
  c.Receive(RegstFree{1, 1}, out);
  c.Receive(RegstFree{1, 0}, out);
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(c.WaitingOn(), "c has finished");
}

TEST(ActorTest, EordBeforeTheLastPieceWaitsForIt) {
  Single p;
  Actor k(p.plan, 2, 0);
  Outbox out;
  k.Receive(Eord{1, 2}, out);
  k.Receive(RegstReady{1, 1, 1}, out);
  EXPECT_TRUE(out.launches.empty());
  k.Receive(RegstReady{1, 0, 0}, out);
  k.Done(out);
  k.Done(out);
  EXPECT_EQ(k.acts(), 2);
  EXPECT_TRUE(k.finished());
}

TEST(ActorTest, WaitingOnAfterTheLastAct) {
  Single p;
  Actor s(p.plan, 0, 1);
  Outbox out;
  s.Start(out);
  EXPECT_EQ(s.WaitingOn(), "s is running act 0");
  s.Done(out);
  EXPECT_EQ(s.WaitingOn(), "s waits for 1 slot of output regst 0 to come back (held by c)");
  Actor c(p.plan, 1, 0);
  c.Receive(RegstReady{0, 0, 0}, out);
  c.Done(out);
  EXPECT_EQ(c.WaitingOn(), "c waits for regst 0 piece 1 (from s)");
  c.Receive(Eord{0, 1}, out);
  EXPECT_EQ(c.WaitingOn(), "c waits for 1 slot of output regst 1 to come back (held by k)");
  Actor k(p.plan, 2, 0);
  k.Receive(Eord{1, 2}, out);
  k.Receive(RegstReady{1, 0, 0}, out);
  k.Receive(RegstReady{1, 1, 1}, out);
  EXPECT_EQ(k.WaitingOn(), "k is running act 0");
  k.Done(out);
  k.Done(out);
  EXPECT_TRUE(k.finished());
}

TEST(ActorTest, ProtocolViolationsThrowPlanErrorNamingTheTask) {
  Single p;
  auto expect_error = [](auto&& f, const std::string& text) {
    try {
      f();
      ADD_FAILURE() << "no error for " << text;
    } catch (const PlanError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  Outbox out;
  expect_error([&] { Actor(p.plan, 1, 0).Done(out); }, "actor c got Done with no act in flight");
  expect_error([&] { Actor(p.plan, 1, 0).Receive(RegstFree{1, 0}, out); }, "not outstanding");
  expect_error([&] { Actor(p.plan, 1, 0).Receive(RegstFree{0, 0}, out); }, "does not produce");
  expect_error([&] { Actor(p.plan, 1, 0).Receive(RegstReady{1, 0, 0}, out); }, "does not consume");
  expect_error([&] { Actor(p.plan, 1, 0).Receive(RegstReady{0, 3, 0}, out); }, "no such slot");
  expect_error(
      [&] {
        Actor c(p.plan, 1, 0);
        c.Receive(RegstReady{0, 0, 0}, out);
        c.Receive(RegstReady{0, 1, 0}, out);
      },
      "twice");
  expect_error(
      [&] {
        Actor c(p.plan, 1, 0);
        c.Receive(RegstReady{0, 0, 1}, out);
        c.Receive(RegstReady{0, 0, 2}, out);
      },
      "still holds that slot");
  expect_error(
      [&] {
        Actor c(p.plan, 1, 0);
        c.Receive(Eord{0, 1}, out);
        c.Receive(RegstReady{0, 1, 1}, out);
      },
      "beyond");
  expect_error(
      [&] {
        Actor c(p.plan, 1, 0);
        c.Receive(Eord{0, 1}, out);
        c.Receive(Eord{0, 1}, out);
      },
      "second Eord");
  expect_error(
      [&] {
        Actor c(p.plan, 1, 0);
        c.Receive(RegstReady{0, 0, 4}, out);
        c.Receive(Eord{0, 2}, out);
      },
      "with 2 pieces after piece 4");
  expect_error(
      [&] {
        Actor s(p.plan, 0, 1);
        s.Start(out);
        s.Done(out);
        s.Receive(RegstFree{0, 0}, out);
        s.Receive(RegstFree{0, 0}, out);  // one consumer, returned twice
      },
      "actor s got RegstFree for regst 0 slot 0, which is not outstanding");
}

TEST(ActorTest, BadTasksAreRejectedAtConstruction) {
  PlanBuilder b;
  const int64_t s = b.Task(plan::SOURCE, "s");
  const int64_t a = b.Task(plan::ACC, "acc", 0);
  const int64_t lone = b.Task(plan::COMPUTE, "lone");
  b.Regst(s, {a}, 1);
  EXPECT_THROW(Actor(b.plan, a, 0), PlanError);     // acc_count 0
  EXPECT_THROW(Actor(b.plan, lone, 0), PlanError);  // no inputs: it would never stop
  EXPECT_THROW(Actor(b.plan, 7, 0), PlanError);
  EXPECT_THROW(Actor(b.plan, s, -1), PlanError);
  b.plan.mutable_regsts(0)->clear_consumers();  // acc consumes it, the regst disagrees
  b.plan.mutable_tasks(1)->set_acc_count(2);
  EXPECT_THROW(Actor(b.plan, a, 0), PlanError);
}

TEST(ActorTest, AccWhoseInputIsNotAMultipleOfItsCountFails) {
  PlanBuilder b;
  const int64_t s = b.Task(plan::SOURCE, "s");
  const int64_t a = b.Task(plan::ACC, "acc", 3);
  b.Regst(s, {a}, 1);
  EXPECT_THROW(InOrder(b.plan, 5), PlanError);
}

// data feeds join twice: directly (1 slot) and through a lag-2 register with 1 slot. join's act
// 2 needs the data's lag-2 piece 0, so data must stay 3 pieces ahead, which 1 slot forbids.
TEST(ActorTest, DeadlockIsDetectedAndReported) {
  PlanBuilder b;
  const int64_t s = b.Task(plan::SOURCE, "data");
  const int64_t j = b.Task(plan::COMPUTE, "join");
  b.Regst(s, {j}, 1);
  b.Regst(s, {j}, 1, /*lag=*/2);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const TestRunResult r = RunWithRandomDelivery(b.plan, Pieces(4), seed);
    EXPECT_FALSE(r.finished);
    EXPECT_TRUE(r.deadlocked);
    EXPECT_NE(r.report.find("join waits for regst 0 piece 1 (from data)"), std::string::npos)
        << r.report;
    EXPECT_NE(r.report.find("data output regst 1 has no free slot (held by join)"),
              std::string::npos)
        << r.report;
  }
  b.plan.mutable_regsts(1)->set_slots(3);  // enough slots: it runs
  EXPECT_TRUE(RunWithRandomDelivery(b.plan, Pieces(4), 1).finished);
}

TEST(ActorTest, SameSeedSameLaunches) {
  const plan::Plan plan = Loop(2);
  const TestRunResult a = RunWithRandomDelivery(plan, Pieces(6), 42);
  const TestRunResult b = RunWithRandomDelivery(plan, Pieces(6), 42);
  EXPECT_EQ(Order(plan, a), Order(plan, b));
  EXPECT_EQ(a.events, b.events);
}

}  // namespace
}  // namespace twinflow::runtime
