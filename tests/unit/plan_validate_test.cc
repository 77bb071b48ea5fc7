// ValidatePlan on a small hand-built Plan and one mutation per rule: each broken rule is a
// PlanError whose message names the task, register or device at fault.
#include "engine/plan/plan_validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "engine/core/error.h"
#include "engine/plan/memory_overlaps.h"
#include "engine/plan/plan_io.h"

namespace twinflow::plan {
namespace {

TensorDesc F32(std::initializer_list<int64_t> shape) {
  TensorDesc desc;
  desc.set_dtype(DTYPE_F32);
  for (int64_t d : shape) desc.add_shape(d);
  return desc;
}

Regst* AddRegst(Plan& plan, int64_t producer, std::initializer_list<int64_t> consumers, int slots,
                const TensorDesc& desc, int64_t bytes) {
  Regst* r = plan.add_regsts();
  r->set_id(plan.regsts_size() - 1);
  r->set_producer(producer);
  for (int64_t c : consumers) r->add_consumers(c);
  r->set_slots(slots);
  *r->mutable_tensor() = desc;
  r->set_bytes_per_slot(bytes);
  return r;
}

Task* AddTask(Plan& plan, TaskKind kind, int device, const std::string& name,
              std::initializer_list<int64_t> in, std::initializer_list<int64_t> out) {
  Task* t = plan.add_tasks();
  t->set_id(plan.tasks_size() - 1);
  t->set_kind(kind);
  t->set_device(device);
  t->set_name(name);
  t->set_pass(PASS_FORWARD);
  for (int64_t r : in) t->add_consumed_regsts(r);
  for (int64_t r : out) t->add_produced_regsts(r);
  return t;
}

void AddOffset(MemoryPlan* memory, int64_t regst, int slot, int64_t offset) {
  SlotOffset* s = memory->add_offsets();
  s->set_regst(regst);
  s->set_slot(slot);
  s->set_offset(offset);
}

// x@0 (SOURCE) -> relu@0 (COMPUTE) -> ar@0, ar@1 (all_reduce over devices 0, 1) -> loss@0
// (SINK); relu@0 also sends loss@0 a control register.
Plan SmallPlan() {
  Plan plan;
  plan.set_version(kPlanVersion);
  plan.set_pieces_per_step(2);
  plan.mutable_cluster()->set_ranks(1);
  plan.mutable_cluster()->set_devices(2);
  for (int d = 0; d < 2; ++d) {
    Device* device = plan.add_devices();
    device->set_id(d);
    device->set_type(DEVICE_CPU);
    device->set_index(d);
  }
  CommGroup* group = plan.add_groups();
  group->add_devices(0);
  group->add_devices(1);
  AddTask(plan, SOURCE, 0, "x@0", {}, {0});
  Task* relu = AddTask(plan, COMPUTE, 0, "relu@0", {0}, {1, 4});
  relu->mutable_op()->set_type("relu");
  *relu->mutable_op()->add_inputs() = F32({4});
  *relu->mutable_op()->add_outputs() = F32({4});
  for (int d = 0; d < 2; ++d) {
    Task* ar = AddTask(plan, COLLECTIVE, d, "ar@" + std::to_string(d), {1}, {2 + d});
    ar->mutable_collective()->set_kind(ALL_REDUCE);
    ar->mutable_collective()->set_reduce_op(REDUCE_SUM);
    ar->mutable_collective()->set_member(d);
  }
  AddTask(plan, SINK, 0, "loss@0", {2, 3, 4}, {});
  AddRegst(plan, 0, {1}, 2, F32({4}), 16);
  AddRegst(plan, 1, {2, 3}, 1, F32({4}), 16);
  AddRegst(plan, 2, {4}, 1, F32({4}), 16);
  AddRegst(plan, 3, {4}, 1, F32({4}), 16);
  AddRegst(plan, 1, {4}, 1, TensorDesc(), 0);
  MemoryPlan* m0 = plan.add_memory();
  m0->set_device(0);
  m0->set_arena_bytes(64);
  AddOffset(m0, 0, 0, 0);
  AddOffset(m0, 0, 1, 16);
  AddOffset(m0, 1, 0, 32);
  AddOffset(m0, 2, 0, 48);
  AddOffset(m0, 4, 0, 64);
  MemoryPlan* m1 = plan.add_memory();
  m1->set_device(1);
  m1->set_arena_bytes(16);
  AddOffset(m1, 3, 0, 0);
  return plan;
}

// Mutates SmallPlan and expects a PlanError mentioning every one of `fragments`.
void ExpectInvalid(const std::function<void(Plan&)>& mutate,
                   std::initializer_list<std::string> fragments) {
  Plan plan = SmallPlan();
  mutate(plan);
  try {
    ValidatePlan(plan);
    ADD_FAILURE() << "no PlanError; expected one mentioning " << *fragments.begin();
  } catch (const PlanError& e) {
    for (const std::string& f : fragments) {
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what() << "\n  lacks: " << f;
    }
  }
}

TEST(PlanValidate, SmallPlanIsValid) { EXPECT_NO_THROW(ValidatePlan(SmallPlan())); }

TEST(PlanValidate, EmptyPlanIsValid) {
  Plan plan;
  plan.set_version(kPlanVersion);
  plan.set_pieces_per_step(1);
  EXPECT_NO_THROW(ValidatePlan(plan));
}

// What the executors assume: a slot starts where its dtype loads from (a mutated Plan once fed
// a misaligned float to an optimizer kernel), at kSlotAlignment on an accelerator, and every
// hyper-parameter is finite (a NaN learning rate once trained on without a word).
TEST(PlanValidate, SlotsAreAlignedAndHyperParametersFinite) {
  ExpectInvalid(
      [](Plan& p) {
        p.mutable_memory(1)->set_arena_bytes(32);
        p.mutable_memory(1)->mutable_offsets(0)->set_offset(2);
      },
      {"regst 3 slot 0 at offset 2", "multiple of 4 bytes"});
  ExpectInvalid(
      [](Plan& p) {
        p.mutable_devices(1)->set_type(DEVICE_CUDA);
        p.mutable_memory(1)->set_arena_bytes(128);
        p.mutable_memory(1)->mutable_offsets(0)->set_offset(16);
      },
      {"offset 16", "multiple of 64 bytes (the accelerator's slot alignment)"});
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    ExpectInvalid(
        [bad](Plan& p) {
          Attr* lr = p.mutable_tasks(1)->mutable_op()->add_attrs();
          lr->set_name("lr");
          lr->set_f(bad);
        },
        {"task 1 'relu@0' attr 'lr'", "hyper-parameters must be finite"});
  }
}

TEST(PlanValidate, IdsMustEqualIndices) {
  ExpectInvalid([](Plan& p) { p.mutable_tasks(1)->set_id(7); }, {"task 1 'relu@0'", "id 7"});
  ExpectInvalid([](Plan& p) { p.mutable_regsts(2)->set_id(0); }, {"regst 2", "id 0"});
  ExpectInvalid([](Plan& p) { p.mutable_devices(1)->set_id(3); }, {"device 1", "id 3"});
  ExpectInvalid([](Plan& p) { p.mutable_groups(0)->set_id(-1); }, {"comm group 0"});
}

TEST(PlanValidate, ReferencesMustBeInRange) {
  ExpectInvalid([](Plan& p) { p.mutable_regsts(1)->set_producer(99); }, {"regst 1", "99"});
  ExpectInvalid([](Plan& p) { p.mutable_regsts(0)->set_consumers(0, -4); }, {"regst 0", "-4"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(1)->set_consumed_regsts(0, 42); },
                {"task 1 'relu@0'", "regst 42"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(0)->set_produced_regsts(0, 1LL << 40); },
                {"task 0 'x@0'", "1099511627776"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(4)->set_device(5); },
                {"task 4 'loss@0'", "device 5"});
  ExpectInvalid([](Plan& p) { p.mutable_groups(0)->set_devices(1, 9); }, {"comm group 0", "9"});
}

TEST(PlanValidate, RegisterNeedsExactlyOneProducerThatListsIt) {
  ExpectInvalid([](Plan& p) { p.mutable_tasks(2)->add_produced_regsts(1); },
                {"regst 1 has two producers", "task 1 'relu@0'", "task 2 'ar@0'"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(1)->mutable_produced_regsts()->RemoveLast(); },
                {"regst 4", "missing", "task 1 'relu@0'"});
  ExpectInvalid([](Plan& p) { p.mutable_regsts(4)->set_producer(0); },
                {"task 1 'relu@0' produces regst 4", "task 0 'x@0'"});
}

TEST(PlanValidate, ConsumersAndConsumedListsAgree) {
  ExpectInvalid([](Plan& p) { p.mutable_regsts(0)->add_consumers(4); },
                {"regst 0 lists consumer task 4 'loss@0'"});
  ExpectInvalid([](Plan& p) { p.mutable_regsts(4)->clear_consumers(); },
                {"task 4 'loss@0' consumes regst 4"});
  ExpectInvalid([](Plan& p) { p.mutable_regsts(1)->set_consumers(0, 3); },
                {"regst 1", "ascending"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(4)->add_consumed_regsts(2); },
                {"task 4 'loss@0'", "regst 2 twice"});
}

TEST(PlanValidate, SlotsAndBytes) {
  ExpectInvalid([](Plan& p) { p.mutable_regsts(0)->set_slots(0); },
                {"regst 0", "task 0 'x@0'", "0 slots"});
  ExpectInvalid([](Plan& p) { p.mutable_regsts(0)->set_slots(2147483647); },
                {"regst 0", "2147483647 slots"});
  ExpectInvalid([](Plan& p) { p.mutable_regsts(1)->set_bytes_per_slot(15); },
                {"regst 1 has 15 bytes per slot", "needs 16"});
  ExpectInvalid([](Plan& p) { p.mutable_regsts(4)->set_bytes_per_slot(8); },
                {"regst 4", "control"});
  ExpectInvalid([](Plan& p) { p.mutable_regsts(1)->set_lag(-1); }, {"regst 1", "lag -1"});
}

TEST(PlanValidate, TensorDescriptions) {
  ExpectInvalid([](Plan& p) { p.mutable_regsts(1)->mutable_tensor()->set_dtype(DType(33)); },
                {"regst 1", "no valid dtype (value 33)"});
  ExpectInvalid([](Plan& p) { p.mutable_regsts(1)->mutable_tensor()->set_shape(0, -4); },
                {"regst 1", "negative"});
  ExpectInvalid(
      [](Plan& p) {
        p.mutable_regsts(1)->mutable_tensor()->set_shape(0, 1LL << 40);
        p.mutable_regsts(1)->mutable_tensor()->add_shape(1LL << 40);
      },
      {"regst 1", "too large"});
  ExpectInvalid(
      [](Plan& p) { p.mutable_tasks(1)->mutable_op()->mutable_inputs(0)->set_shape(0, 5); },
      {"task 1 'relu@0' input 0", "f32[5]", "regst 0"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(1)->mutable_op()->clear_outputs(); },
                {"task 1 'relu@0'", "0 output tensors"});
}

TEST(PlanValidate, Regions) {
  auto with_region = [](int64_t begin, int64_t end, int64_t logical) {
    return [=](Plan& p) {
      OpDesc* op = p.mutable_tasks(1)->mutable_op();
      *op->add_input_logical() = F32({logical});
      Range* range = op->add_input_regions()->add_ranges();
      range->set_begin(begin);
      range->set_end(end);
    };
  };
  Plan plan = SmallPlan();
  with_region(4, 8, 8)(plan);
  EXPECT_NO_THROW(ValidatePlan(plan));
  ExpectInvalid(with_region(6, 10, 8), {"task 1 'relu@0' input 0 region", "[6:10)"});
  ExpectInvalid(with_region(3, 2, 8), {"task 1 'relu@0' input 0 region"});
  ExpectInvalid(with_region(0, 2, 8), {"physical extent 4"});
}

TEST(PlanValidate, KindsTakeTheirRegisters) {
  ExpectInvalid([](Plan& p) { p.mutable_tasks(1)->set_kind(TASK_KIND_UNSPECIFIED); },
                {"task 1 'relu@0'", "kind"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(1)->set_kind(static_cast<TaskKind>(99)); },
                {"task 1 'relu@0'", "kind (99)"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(4)->set_kind(SOURCE); },
                {"task 4 'loss@0' (SOURCE)"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(4)->set_kind(ACC); }, {"task 4 'loss@0' (ACC)"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(4)->set_kind(SEND); }, {"task 4 'loss@0'", "peer"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(1)->mutable_op()->set_type(""); },
                {"task 1 'relu@0'", "op type"});
}

TEST(PlanValidate, AccAndRepeatCounts) {
  ExpectInvalid(
      [](Plan& p) {
        p.mutable_tasks(1)->set_kind(REPEAT);
        p.mutable_tasks(1)->mutable_produced_regsts()->RemoveLast();
        p.mutable_regsts(4)->set_producer(0);
        p.mutable_tasks(0)->add_produced_regsts(4);
        p.mutable_tasks(1)->set_repeat_count(0);
      },
      {"task 1 'relu@0' has count 0"});
}

TEST(PlanValidate, CollectiveMembership) {
  ExpectInvalid([](Plan& p) { p.mutable_tasks(3)->mutable_collective()->set_member(0); },
                {"task 3 'ar@1'", "member 0"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(3)->mutable_collective()->set_member(2); },
                {"task 3 'ar@1'", "member 2"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(2)->mutable_collective()->set_group(3); },
                {"task 2 'ar@0'", "comm group 3"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(3)->set_issue_order(1); }, {"1 of its 2 members"});
  ExpectInvalid(
      [](Plan& p) { p.mutable_tasks(3)->mutable_collective()->set_kind(CollectiveKind(9)); },
      {"task 3 'ar@1'", "collective kind (value 9)"});
  ExpectInvalid(
      [](Plan& p) { p.mutable_tasks(3)->mutable_collective()->set_reduce_op(REDUCE_NONE); },
      {"task 3 'ar@1'", "all_reduce", "reduce op none"});
  ExpectInvalid(
      [](Plan& p) {
        for (int t : {2, 3}) p.mutable_tasks(t)->mutable_collective()->set_kind(BROADCAST);
      },
      {"task 2 'ar@0'", "broadcast", "reduces nothing"});
}

// SmallPlan's all_reduce as a bucket of two tensors: relu@0's regst 1 and a regst 5 of x@0,
// into outputs of `shape` (regst 6 on device 0, 7 on device 1) the sink reads.
void MakeBucket(Plan& p, std::initializer_list<int64_t> shape) {
  int64_t bytes = 4;
  for (int64_t d : shape) bytes *= d;
  p.mutable_tasks(0)->add_produced_regsts(5);
  AddRegst(p, 0, {2, 3}, 1, F32({4}), 16);
  for (int d = 0; d < 2; ++d) {
    p.mutable_tasks(2 + d)->add_consumed_regsts(5);
    p.mutable_tasks(2 + d)->add_produced_regsts(6 + d);
    AddRegst(p, 2 + d, {4}, 1, F32(shape), bytes);
    p.mutable_tasks(4)->add_consumed_regsts(6 + d);
  }
  AddOffset(p.mutable_memory(0), 5, 0, 80);
  AddOffset(p.mutable_memory(0), 6, 0, 96);
  AddOffset(p.mutable_memory(1), 7, 0, 16);
  p.mutable_memory(0)->set_arena_bytes(128);
  p.mutable_memory(1)->set_arena_bytes(128);
}

// A bucket reduces input k into output k: the pairs must be one tensor each, and only an
// all_reduce may carry several.
TEST(PlanValidate, AllReduceBucketsPairTheirTensors) {
  Plan plan = SmallPlan();
  MakeBucket(plan, {4});
  EXPECT_NO_THROW(ValidatePlan(plan));
  EXPECT_EQ(DataPairs(plan, plan.tasks(2)).size(), 2u);
  ExpectInvalid(
      [](Plan& p) {
        MakeBucket(p, {2, 2});
      },
      {"task 2 'ar@0'", "bucket", "regst 5", "regst 6"});
  ExpectInvalid(
      [](Plan& p) {
        MakeBucket(p, {4});
        for (int t : {2, 3}) {
          p.mutable_tasks(t)->mutable_collective()->set_kind(BROADCAST);
          p.mutable_tasks(t)->mutable_collective()->set_reduce_op(REDUCE_NONE);
        }
      },
      {"task 2 'ar@0'", "an all_reduce bucket"});
}

// An in-place all_reduce overwrites its input: regst 1 feeds both members, so neither may.
TEST(PlanValidate, InPlaceSumsOnlyAnInputOfItsOwn) {
  ExpectInvalid([](Plan& p) { p.mutable_tasks(2)->mutable_collective()->set_in_place(true); },
                {"task 2 'ar@0'", "in place", "regst 1"});
}

TEST(PlanValidate, CopyTransfers) {
  // ar@1 becomes a copy of relu@0's output onto device 1 (and the group shrinks to device 0).
  auto copy = [](int64_t src, int64_t begin, int64_t end) {
    return [=](Plan& p) {
      p.mutable_groups(0)->mutable_devices()->RemoveLast();
      Task* t = p.mutable_tasks(3);
      t->set_kind(COPY);
      Transfer* tr = t->add_transfers();
      tr->set_src_regst(src);
      for (RegionDesc* region : {tr->mutable_src_region(), tr->mutable_dst_region()}) {
        region->add_ranges()->set_end(4);
      }
      Range* range = tr->mutable_region()->add_ranges();
      range->set_begin(begin);
      range->set_end(end);
    };
  };
  Plan plan = SmallPlan();
  copy(1, 1, 3)(plan);
  EXPECT_NO_THROW(ValidatePlan(plan));
  ExpectInvalid(copy(0, 0, 4), {"task 3 'ar@1' transfer 0", "regst 0"});
  ExpectInvalid(copy(1, 2, 6), {"task 3 'ar@1' transfer 0", "not inside"});
  // Without transfers a COPY writes zeros: valid.
  Plan zeros = SmallPlan();
  copy(1, 0, 4)(zeros);
  zeros.mutable_tasks(3)->clear_transfers();
  EXPECT_NO_THROW(ValidatePlan(zeros));
}

TEST(PlanValidate, AssignWritesAVariable) {
  ExpectInvalid([](Plan& p) { p.mutable_tasks(4)->set_kind(ASSIGN); },
                {"task 4 'loss@0'", "regst 2", "VARIABLE"});
}

// Every enum the Plan carries is refused when left UNSPECIFIED (0), naming what holds it.
TEST(PlanValidate, UnspecifiedEnumsAreRefused) {
  ExpectInvalid(
      [](Plan& p) {
        p.mutable_tasks(3)->mutable_collective()->set_kind(COLLECTIVE_KIND_UNSPECIFIED);
      },
      {"task 3 'ar@1'", "no valid collective kind (unspecified)"});
  ExpectInvalid(
      [](Plan& p) {
        p.mutable_tasks(2)->mutable_collective()->set_reduce_op(REDUCE_OP_UNSPECIFIED);
      },
      {"task 2 'ar@0'", "no valid reduce op (unspecified)"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(1)->set_pass(PASS_UNSPECIFIED); },
                {"task 1 'relu@0'", "no valid pass"});
  ExpectInvalid(
      [](Plan& p) {
        p.mutable_tasks(1)->mutable_op()->mutable_inputs(0)->set_dtype(DTYPE_UNSPECIFIED);
      },
      {"task 1 'relu@0'"});
  ExpectInvalid([](Plan& p) { p.mutable_devices(1)->set_type(DEVICE_TYPE_UNSPECIFIED); },
                {"device 1", "no valid device type (unspecified)"});
  ExpectInvalid(
      [](Plan& p) {
        Binding* b = p.add_fetches();
        b->set_name("loss");
        *b->mutable_logical() = F32({4});
      },
      {"binding 'loss'", "no valid reduce op (unspecified)"});
}

TEST(PlanValidate, TraitsFitTheTaskKind) {
  ExpectInvalid([](Plan& p) { p.mutable_tasks(2)->set_recomputes(true); },
                {"task 2 'ar@0'", "COLLECTIVE"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(1)->set_optimizer_update(true); },
                {"task 1 'relu@0'", "optimizer update outside the optimizer pass"});
  ExpectInvalid([](Plan& p) { p.mutable_tasks(1)->set_stage(-1); },
                {"task 1 'relu@0'", "pipeline stage -1"});
}

// A Plan written before the typed enums (version 1) is refused, saying both versions.
TEST(PlanValidate, OlderVersionIsRefused) {
  ExpectInvalid([](Plan& p) { p.set_version(1); },
                {"plan version 1", "reads version " + std::to_string(kPlanVersion)});
  EXPECT_EQ(kPlanVersion, 2u);
}

TEST(PlanValidate, CyclesAreNamedAndLagsBreakThem) {
  auto loop = [](int lag) {
    return [lag](Plan& p) {
      // ar@0's output back into relu@0.
      p.mutable_tasks(1)->add_consumed_regsts(2);
      *p.mutable_tasks(1)->mutable_op()->add_inputs() = F32({4});
      p.mutable_regsts(2)->set_consumers(0, 1);
      p.mutable_regsts(2)->add_consumers(4);
      p.mutable_regsts(2)->set_lag(lag);
    };
  };
  ExpectInvalid(loop(0), {"cycle", "task 1 'relu@0'", "task 2 'ar@0'"});
  Plan plan = SmallPlan();
  loop(1)(plan);
  EXPECT_NO_THROW(ValidatePlan(plan));
}

TEST(PlanValidate, MemoryPlans) {
  ExpectInvalid([](Plan& p) { p.mutable_memory(0)->mutable_offsets(3)->set_offset(60); },
                {"memory plan of device 0", "regst 2 slot 0", "offset 60"});
  ExpectInvalid([](Plan& p) { p.mutable_memory(0)->mutable_offsets(3)->set_offset(-1); },
                {"regst 2 slot 0", "offset -1"});
  ExpectInvalid([](Plan& p) { p.mutable_memory(0)->mutable_offsets(3)->set_offset(INT64_MAX); },
                {"regst 2 slot 0"});
  ExpectInvalid([](Plan& p) { p.mutable_memory(0)->mutable_offsets()->RemoveLast(); },
                {"regst 4", "offsets for 0 of its 1 slots"});
  ExpectInvalid([](Plan& p) { p.mutable_memory(0)->mutable_offsets(1)->set_slot(2); },
                {"regst 0 slot 2"});
  ExpectInvalid([](Plan& p) { p.mutable_memory(0)->mutable_offsets(1)->set_slot(0); },
                {"regst 0 slot 0 twice"});
  ExpectInvalid([](Plan& p) { p.mutable_memory(1)->mutable_offsets(0)->set_regst(2); },
                {"device 1", "regst 2", "produced on device 0"});
  ExpectInvalid([](Plan& p) { p.mutable_memory()->RemoveLast(); },
                {"1 memory plans for 2 devices"});
  ExpectInvalid([](Plan& p) { p.mutable_memory(1)->set_device(0); }, {"device 0"});
  ExpectInvalid([](Plan& p) { p.mutable_memory(1)->set_peak_bytes(17); }, {"device 1", "peak 17"});
}

TEST(PlanValidate, DevicesAndHeader) {
  ExpectInvalid([](Plan& p) { p.mutable_devices(1)->set_type(DeviceType(7)); },
                {"device 1 (value 7:1)", "device type"});
  ExpectInvalid([](Plan& p) { p.mutable_devices(1)->set_index(0); }, {"device 1 (cpu:0)", "twice"});
  ExpectInvalid([](Plan& p) { p.mutable_devices(1)->set_rank(1); }, {"device 1", "rank 1"});
  ExpectInvalid([](Plan& p) { p.set_pieces_per_step(0); }, {"pieces_per_step 0"});
  ExpectInvalid([](Plan& p) { p.mutable_cluster()->set_devices(3); }, {"cluster"});
}

TEST(PlanValidate, Bindings) {
  auto fetch = [](int64_t regst, int64_t begin) {
    return [=](Plan& p) {
      Binding* b = p.add_fetches();
      b->set_name("loss");
      *b->mutable_logical() = F32({8});
      b->set_reduce(REDUCE_NONE);
      BindingPart* part = b->add_parts();
      part->set_regst(regst);
      Range* range = part->mutable_region()->add_ranges();
      range->set_begin(begin);
      range->set_end(begin + 4);
    };
  };
  Plan plan = SmallPlan();
  fetch(2, 4)(plan);
  EXPECT_NO_THROW(ValidatePlan(plan));
  ExpectInvalid(fetch(4, 0), {"binding 'loss' part 0", "regst 4"});
  ExpectInvalid(fetch(17, 0), {"binding 'loss' part 0", "regst 17"});
  ExpectInvalid(fetch(2, 6), {"binding 'loss' part 0 region"});
}

TEST(PlanValidate, HostileNamesAreClipped) {
  Plan plan = SmallPlan();
  plan.mutable_tasks(1)->set_name(std::string(100000, 'n'));
  plan.mutable_tasks(1)->set_id(5);
  try {
    ValidatePlan(plan);
    FAIL();
  } catch (const PlanError& e) {
    EXPECT_LT(std::string(e.what()).size(), 400u);
  }
}

}  // namespace
}  // namespace twinflow::plan
