// Random valid Plans (tests/support/random_plan.h) pass validation and never deadlock; random
// corruptions of their bytes and random field mutations never crash the loader or the
// validator: each one either parses and validates or is a PlanError, never another exception.
#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "engine/core/error.h"
#include "engine/plan/plan_io.h"
#include "engine/plan/plan_validate.h"
#include "tests/support/random_plan.h"
#include "tests/support/token_sim.h"

namespace twinflow::plan {
namespace {

// rc::gen::inRange scales its range with the test size; fuzzing wants the whole range always.
template <typename T>
T Uniform(T lo, T hi) {  // [lo, hi)
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}
int Uniform(int lo, int hi) { return Uniform<int>(lo, hi); }

Plan DrawPlan() {
  testing::RandomPlanOptions options;
  options.max_tasks = Uniform(1, 24);
  options.max_slots = Uniform(1, 5);
  options.rate_changes = *rc::gen::arbitrary<bool>();
  options.lags = *rc::gen::arbitrary<bool>();
  Rng rng(*rc::gen::resize(100, rc::gen::arbitrary<uint64_t>()));
  return testing::RandomPlan(rng, options);
}

// True when `f` returns, false on a PlanError; anything else fails the property.
template <typename F>
bool AcceptedOrPlanError(F f) {
  try {
    f();
    return true;
  } catch (const PlanError&) {
    return false;
  } catch (const std::exception& e) {
    RC_FAIL(std::string("not a PlanError: ") + e.what());
  }
  return false;
}

const std::vector<int64_t> kExtremes = {0,
                                        -1,
                                        1,
                                        2,
                                        3,
                                        7,
                                        1 << 20,
                                        (1 << 20) + 1,
                                        std::numeric_limits<int32_t>::max(),
                                        std::numeric_limits<int32_t>::min(),
                                        int64_t{1} << 31,
                                        std::numeric_limits<int64_t>::max(),
                                        std::numeric_limits<int64_t>::min(),
                                        int64_t{1} << 40};

int64_t Value() {
  return Uniform(0, 2) ? Uniform<int64_t>(-2, 40) : *rc::gen::elementOf(kExtremes);
}

template <typename T>
int Index(const T& repeated) {
  return Uniform(0, repeated.size());
}

int32_t Value32() { return static_cast<int32_t>(Value()); }

// MutateField's choices 0-4, 16 and 17: a field of a task.
void MutateTask(Task& task, int choice) {
  switch (choice) {
    case 0:
      task.set_id(Value());
      break;
    case 1:
      task.set_device(Value32());
      break;
    case 2:
      task.set_kind(static_cast<TaskKind>(Uniform(-1, 14)));
      break;
    case 3:
      if (task.consumed_regsts_size())
        task.set_consumed_regsts(Index(task.consumed_regsts()), Value());
      break;
    case 4:
      if (task.produced_regsts_size())
        task.set_produced_regsts(Index(task.produced_regsts()), Value());
      break;
    case 16:
      task.set_acc_count(Value());
      task.set_repeat_count(Value());
      break;
    case 17:
      task.mutable_collective()->set_member(Value32());
      if (*rc::gen::arbitrary<bool>()) task.mutable_collective()->set_group(Value());
      // Enums out of range or unspecified: proto3 keeps unknown values.
      if (*rc::gen::arbitrary<bool>())
        task.mutable_collective()->set_kind(CollectiveKind(Uniform(0, 7)));
      if (*rc::gen::arbitrary<bool>())
        task.mutable_collective()->set_reduce_op(ReduceOp(Uniform(0, 6)));
      if (*rc::gen::arbitrary<bool>()) task.set_pass(Pass(Uniform(0, 5)));
      break;
  }
}

// MutateField's choices 5-11: a field of a register.
void MutateRegst(Regst& regst, int choice) {
  switch (choice) {
    case 5:
      regst.set_producer(Value());
      break;
    case 6:
      if (regst.consumers_size()) regst.set_consumers(Index(regst.consumers()), Value());
      break;
    case 7:
      regst.set_slots(Value32());
      break;
    case 8:
      regst.set_bytes_per_slot(Value());
      break;
    case 9:
      regst.set_lag(Value32());
      break;
    case 10:
      if (regst.tensor().shape_size()) {
        regst.mutable_tensor()->set_shape(Index(regst.tensor().shape()), Value());
      }
      break;
    case 11:
      regst.mutable_tensor()->set_dtype(*rc::gen::elementOf(std::vector<DType>{
          DTYPE_UNSPECIFIED, DTYPE_F32, DTYPE_F16, DTYPE_BF16, DTYPE_I64, DType(99)}));
      break;
  }
}

// MutateField's choices 12-15, 18 and 19: a field of a memory plan, or of the Plan itself.
void MutatePlan(Plan& plan, int choice) {
  switch (choice) {
    case 12:
    case 13:
    case 14: {
      MemoryPlan& memory = *plan.mutable_memory(Index(plan.memory()));
      if (memory.offsets_size() == 0) break;
      SlotOffset& slot = *memory.mutable_offsets(Index(memory.offsets()));
      if (choice == 12) slot.set_offset(Value());
      if (choice == 13) slot.set_slot(Value32());
      if (choice == 14) slot.set_regst(Value());
      break;
    }
    case 15:
      plan.mutable_memory(Index(plan.memory()))->set_arena_bytes(Value());
      break;
    case 18:
      plan.set_pieces_per_step(Value());
      break;
    case 19:
      plan.mutable_devices(Index(plan.devices()))->set_id(Value32());
      break;
  }
}

// MutateField's choice 20: the last entry of a task's inputs, a register's consumers or a
// memory plan's offsets dropped.
void DropListEntry(Plan& plan, Task& task, Regst& regst) {
  const int which = Uniform(0, 3);
  if (which == 0 && task.consumed_regsts_size()) task.mutable_consumed_regsts()->RemoveLast();
  if (which == 1 && regst.consumers_size()) regst.mutable_consumers()->RemoveLast();
  auto* offsets = plan.mutable_memory(Index(plan.memory()))->mutable_offsets();
  if (which == 2 && !offsets->empty()) offsets->RemoveLast();
}

// One field of `plan` set to a random or extreme value, or one list entry dropped.
void MutateField(Plan& plan) {
  const int choice = Uniform(0, 21);
  if (plan.tasks_size() == 0 || plan.regsts_size() == 0) return;
  Task& task = *plan.mutable_tasks(Index(plan.tasks()));
  Regst& regst = *plan.mutable_regsts(Index(plan.regsts()));
  if (choice >= 5 && choice <= 11) {
    MutateRegst(regst, choice);
  } else if ((choice >= 12 && choice <= 15) || choice == 18 || choice == 19) {
    MutatePlan(plan, choice);
  } else if (choice == 20) {
    DropListEntry(plan, task, regst);
  } else {
    MutateTask(task, choice);
  }
}

// Flips, truncations, insertions and duplicated ranges of serialised bytes.
std::string MutateBytes(std::string bytes) {
  const int edits = Uniform(1, 4);
  for (int e = 0; e < edits && !bytes.empty(); ++e) {
    const size_t at = Uniform<size_t>(0, bytes.size());
    switch (Uniform(0, 4)) {
      case 0:
        bytes[at] = static_cast<char>(bytes[at] ^ (1 << Uniform(0, 8)));
        break;
      case 1:
        bytes.resize(at);
        break;
      case 2:
        bytes.insert(at, *rc::gen::resize(100, rc::gen::container<std::string>(
                                                   Uniform(1, 9), rc::gen::arbitrary<char>())));
        break;
      case 3: {
        const size_t length = Uniform<size_t>(1, bytes.size() - at + 1);
        bytes.insert(Uniform<size_t>(0, bytes.size() + 1), bytes.substr(at, length));
        break;
      }
    }
  }
  return bytes;
}

RC_GTEST_PROP(PlanFuzz, RandomPlansAreValidAndTerminate, ()) {
  const Plan plan = DrawPlan();
  ValidatePlan(plan);
  int kinds = 0;
  for (const Task& task : plan.tasks()) kinds |= 1 << task.kind();
  bool lagged = false;
  for (const Regst& regst : plan.regsts()) lagged = lagged || regst.lag() > 0;
  RC_TAG(plan.tasks_size() > 8 ? "over 8 tasks" : "up to 8 tasks");
  RC_TAG((kinds & (1 << ACC)) ? "with ACC" : "no ACC",
         (kinds & (1 << REPEAT)) ? "with REPEAT" : "no REPEAT");
  RC_TAG((kinds & (1 << COLLECTIVE)) ? "with collective" : "no collective",
         lagged ? "lagged" : "no lag");
  const int64_t steps = Uniform(1, 7);
  const std::string stuck = testing::SimulateTokens(plan, steps);
  RC_ASSERT(stuck.empty());
  for (const Task& task : plan.tasks()) {
    if (task.kind() == SOURCE)
      RC_ASSERT(testing::SourcePieces(plan, task.id(), steps) == plan.pieces_per_step() * steps);
  }
  const Plan parsed = ParsePlan(plan.SerializeAsString(), "random");
  RC_ASSERT(parsed.SerializeAsString() == plan.SerializeAsString());
}

RC_GTEST_PROP(PlanFuzz, CorruptBytesAreRejectedOrValid, ()) {
  const Plan plan = DrawPlan();
  const std::string bytes = MutateBytes(plan.SerializeAsString());
  AcceptedOrPlanError([&] { ParsePlan(bytes, "fuzz"); });
  // Past the hash check: whatever still parses, restamped, goes through the validator.
  Plan reparsed;
  const google::protobuf::LogSilencer silence;  // invalid UTF-8 is expected here
  if (!reparsed.ParseFromString(bytes)) return;
  reparsed.set_version(kPlanVersion);
  reparsed.set_content_hash(ContentHash(reparsed));
  RC_TAG(AcceptedOrPlanError([&] { ParsePlan(reparsed.SerializeAsString(), "fuzz"); })
             ? "restamped: valid"
             : "restamped: PlanError");
}

RC_GTEST_PROP(PlanFuzz, FieldMutationsAreRejectedOrValid, ()) {
  Plan plan = DrawPlan();
  const int mutations = Uniform(1, 4);
  for (int i = 0; i < mutations; ++i) MutateField(plan);
  RC_TAG(AcceptedOrPlanError([&] { ValidatePlan(plan); }) ? "valid" : "PlanError");
}

// S (4 micro-batches) feeds ACC -> REPEAT -> Z and, directly, Y -> Z: Z's first act needs the
// whole step through ACC, so the direct branch must buffer 4 pieces (r0's 1 slot plus r3's).
Plan Diamond(int32_t r3_slots) {
  Plan plan;
  plan.set_pieces_per_step(4);
  Device* device = plan.add_devices();
  device->set_type(DEVICE_CPU);
  auto task = [&](TaskKind kind, std::vector<int64_t> in, std::vector<int64_t> out) {
    Task* t = plan.add_tasks();
    t->set_id(plan.tasks_size() - 1);
    t->set_kind(kind);
    t->set_name("t" + std::to_string(t->id()));
    for (int64_t r : in) t->add_consumed_regsts(r);
    for (int64_t r : out) t->add_produced_regsts(r);
    t->set_acc_count(4);
    t->set_repeat_count(4);
  };
  auto regst = [&](int64_t producer, std::vector<int64_t> consumers, int32_t slots) {
    Regst* r = plan.add_regsts();
    r->set_id(plan.regsts_size() - 1);
    r->set_producer(producer);
    for (int64_t c : consumers) r->add_consumers(c);
    r->set_slots(slots);
  };
  task(SOURCE, {}, {0});
  task(ACC, {0}, {1});
  task(REPEAT, {1}, {2});
  task(SINK, {0}, {3});  // Y: a pass-through in all but name
  task(SINK, {2, 3}, {});
  regst(0, {1, 3}, 1);
  regst(1, {2}, 1);
  regst(2, {4}, 1);
  regst(3, {4}, r3_slots);
  return plan;
}

TEST(SimulateTokens, FindsSlotDeadlocksAndOnlyThose) {
  EXPECT_NE(testing::SimulateTokens(Diamond(1), 2).find("full"), std::string::npos);
  EXPECT_NE(testing::SimulateTokens(Diamond(2), 2), "");
  EXPECT_EQ(testing::SimulateTokens(Diamond(3), 2), "");
  EXPECT_EQ(testing::SimulateTokens(Diamond(8), 5), "");
}

}  // namespace
}  // namespace twinflow::plan
