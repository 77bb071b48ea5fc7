// The validator matches what the executor assumes: a compiled training Plan (an MLP under
// dp=2, micro-batched), mutated in one or two fields, either fails validation with a PlanError
// or, once accepted, runs its steps to the end or stops with a named twinflow::Error (within
// the watchdog). Anything else (another exception, a crash, or under `make test-sanitize` an
// ASan or UBSan report) fails the property.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/compiler/compile.h"
#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/ops/builtin_ops.h"
#include "engine/plan/plan_validate.h"
#include "engine/runtime/threaded_executor.h"
#include "engine/sbp/alpha_beta_cost_model.h"
#include "kernels/cpu/cpu_kernels.h"
#include "models/model.h"
#include "planner/lower_options.h"

namespace twinflow {
namespace {

const models::MlpConfig kMlp{{6, 8, 4}, 4};

const plan::Plan& TrainingPlan() {
  static const plan::Plan plan = [] {
    const graph::OpRegistry ops = ops::BuiltinOps();
    models::BuildOptions options;
    options.strategy = parallel::ParseStrategy("dp=2,mb=2");
    options.devices = 2;
    const models::BuiltModel model = models::BuildMlp(ops, kMlp, options);
    compiler::CompileOptions compile;
    compile.lower = planner::StrategyLowerOptions(model.strategy);
    compile.lower.fetches = {model.loss};
    return compiler::Compile(model.graph, ops, sbp::AlphaBetaCostModel(), compile).plan;
  }();
  return plan;
}

template <typename T>
T Uniform(T lo, T hi) {  // [lo, hi)
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

int64_t Value() {
  static const std::vector<int64_t> extremes = {-1,
                                                0,
                                                1,
                                                2,
                                                3,
                                                4,
                                                8,
                                                60,
                                                64,
                                                1 << 20,
                                                std::numeric_limits<int64_t>::max(),
                                                std::numeric_limits<int64_t>::min()};
  return Uniform(0, 2) ? Uniform<int64_t>(-8, 72) : *rc::gen::elementOf(extremes);
}

// A field the executor reads at run time: a slot offset, a region bound, a hyper-parameter, a
// shape extent, a slot count, a lag, an ACC count, a collective member or a piece count.
void Mutate(plan::Plan& plan) {
  plan::Task& task = *plan.mutable_tasks(Uniform(0, plan.tasks_size()));
  plan::Regst& regst = *plan.mutable_regsts(Uniform(0, plan.regsts_size()));
  plan::OpDesc& op = *task.mutable_op();
  switch (Uniform(0, 9)) {
    case 0: {
      plan::MemoryPlan& memory = *plan.mutable_memory(Uniform(0, plan.memory_size()));
      if (memory.offsets_size() == 0) return;
      memory.mutable_offsets(Uniform(0, memory.offsets_size()))->set_offset(Value());
      return;
    }
    case 1: {
      auto* regions = Uniform(0, 2) ? op.mutable_input_regions() : op.mutable_output_regions();
      if (regions->empty()) return;
      plan::RegionDesc& region = regions->at(Uniform(0, regions->size()));
      if (region.ranges_size() == 0) return;
      plan::Range& range = *region.mutable_ranges(Uniform(0, region.ranges_size()));
      Uniform(0, 2) ? range.set_begin(Value()) : range.set_end(Value());
      return;
    }
    case 2: {
      if (op.attrs_size() == 0) return;
      plan::Attr& attr = *op.mutable_attrs(Uniform(0, op.attrs_size()));
      const std::vector<double> values = {std::nan(""), std::numeric_limits<double>::infinity(),
                                          -1.0, 0.0, 1e30};
      if (attr.value_case() == plan::Attr::kF) attr.set_f(*rc::gen::elementOf(values));
      if (attr.value_case() == plan::Attr::kI) attr.set_i(Value());
      return;
    }
    case 3:
      if (regst.tensor().shape_size()) {
        regst.mutable_tensor()->set_shape(Uniform(0, regst.tensor().shape_size()), Value());
      }
      return;
    case 4:
      regst.set_slots(static_cast<int32_t>(Value()));
      return;
    case 5:
      regst.set_lag(static_cast<int32_t>(Value()));
      return;
    case 6:
      task.set_acc_count(Value());
      return;
    case 7:
      task.mutable_collective()->set_member(static_cast<int32_t>(Value()));
      return;
    case 8:
      plan.set_pieces_per_step(Value());
      return;
  }
}

std::map<std::string, Tensor> Batch(int64_t step) {
  Rng rng(static_cast<uint64_t>(step) + 1);
  Tensor labels(Shape{kMlp.batch}, DType::kI32);
  for (int64_t i = 0; i < kMlp.batch; ++i) labels.SetDouble(i, static_cast<double>(i % 4));
  return {{"x", Tensor::Random(Shape{kMlp.batch, kMlp.widths[0]}, DType::kF32, rng)},
          {"labels", labels}};
}

// The cases the issue found running: a negative region begin and a misaligned slot are refused
// before anything runs.
TEST(PlanRunFuzz, NegativeRegionsAndMisalignedSlotsAreRefused) {
  plan::Plan plan = TrainingPlan();
  bool mutated = false;
  for (plan::Task& task : *plan.mutable_tasks()) {
    for (plan::RegionDesc& region : *task.mutable_op()->mutable_input_regions()) {
      if (mutated || region.ranges_size() == 0) continue;
      region.mutable_ranges(0)->set_begin(-1);
      mutated = true;
    }
  }
  ASSERT_TRUE(mutated);
  EXPECT_THROW(plan::ValidatePlan(plan), PlanError);
  plan = TrainingPlan();
  plan::SlotOffset* slot = nullptr;
  for (plan::SlotOffset& s : *plan.mutable_memory(0)->mutable_offsets()) {
    if (plan.regsts(static_cast<int>(s.regst())).bytes_per_slot() > 0) slot = &s;
  }
  ASSERT_NE(slot, nullptr);
  slot->set_offset(slot->offset() + 2);
  plan.mutable_memory(0)->set_arena_bytes(plan.memory(0).arena_bytes() + 64);
  EXPECT_THROW(plan::ValidatePlan(plan), PlanError);
}

RC_GTEST_PROP(PlanRunFuzz, AcceptedMutantsRunToTheEndOrFailNamed, ()) {
  plan::Plan plan = TrainingPlan();
  const int mutations = Uniform(1, 3);
  for (int i = 0; i < mutations; ++i) Mutate(plan);
  try {
    plan::ValidatePlan(plan);
  } catch (const PlanError&) {
    RC_TAG("refused by the validator");
    return;
  }
  static const kernels::KernelRegistry kernels = kernels::CpuKernels();
  try {
    runtime::ThreadedExecutor executor(plan, kernels);
    runtime::RunOptions run;
    run.steps = 2;
    run.watchdog_seconds = 0.3;  // a stall is a named TimeoutError too; tasks take microseconds
    executor.Run(Batch, run);
    RC_TAG("ran to the end");
  } catch (const Error& e) {
    RC_TAG(std::string("stopped: ") + ErrorKindName(e.kind()));
  } catch (const std::exception& e) {
    RC_FAIL(std::string("not a twinflow::Error: ") + e.what());
  }
}

}  // namespace
}  // namespace twinflow
