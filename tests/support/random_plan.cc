#include "tests/support/random_plan.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/plan/plan_io.h"
#include "engine/plan/slot_alignment.h"
#include "tests/support/token_sim.h"

namespace twinflow::testing {
namespace {

using plan::Plan;
using plan::Regst;
using plan::Task;
using plan::TaskKind;

// Raises the slot counts that a step-by-step run finds too small, until it completes.
void RepairSlots(Plan& plan) {
  constexpr int64_t kSteps = 4;
  for (int round = 0; round < 1000; ++round) {
    TokenSim sim(plan, kSteps);
    if (sim.Run()) return;
    const std::vector<int64_t> full = sim.FullOutputs();
    if (full.empty()) throw std::logic_error("RandomPlan drew a deadlocking plan: " + sim.Report());
    for (int64_t r : full) plan.mutable_regsts(r)->set_slots(plan.regsts(r).slots() + 1);
  }
  throw std::logic_error("RandomPlan could not size the slots of its plan");
}

struct Available {
  int64_t regst;
  int64_t rate;  // pieces per step
};

// Builds the DAG in topological order: every task only consumes registers of earlier tasks,
// except the lagged loop registers added at the end.
class Generator {
 public:
  Generator(Rng& rng, const RandomPlanOptions& options) : rng_(rng), options_(options) {}

  Plan Build() {
    micro_ = rng_.UniformInt(1, 4);
    plan_.set_pieces_per_step(micro_);
    const int64_t devices = rng_.UniformInt(1, 4);
    // One rank: tasks read registers of any device, which only devices of one process can.
    const int64_t ranks = 1;
    for (int64_t d = 0; d < devices; ++d) {
      plan::Device* device = plan_.add_devices();
      device->set_id(d);
      device->set_type(plan::DEVICE_CPU);
      device->set_index(d);
      device->set_rank(0);
    }
    plan_.mutable_cluster()->set_ranks(ranks);
    plan_.mutable_cluster()->set_devices(devices);
    plan_.mutable_cluster()->set_description("random test plan");

    const int64_t budget = std::max(3, options_.max_tasks);
    AddProducer(plan::SOURCE, micro_);
    while (plan_.tasks_size() + 2 < budget) AddSomething(budget);
    AddSinks();
    if (options_.lags) {
      for (int64_t i = rng_.UniformInt(0, 3); i > 0; --i) AddLoop();
    }
    for (Regst& regst : *plan_.mutable_regsts()) {
      std::sort(regst.mutable_consumers()->begin(), regst.mutable_consumers()->end());
    }
    RepairSlots(plan_);
    PlanMemory();
    plan_.set_version(plan::kPlanVersion);
    plan_.set_content_hash(plan::ContentHash(plan_));
    return std::move(plan_);
  }

 private:
  plan::TensorDesc RandomDesc() {
    plan::TensorDesc desc;
    desc.set_dtype(rng_.UniformInt(0, 7) == 0 ? plan::DTYPE_F64 : plan::DTYPE_F32);
    for (int64_t k = rng_.UniformInt(1, 2); k > 0; --k) desc.add_shape(rng_.UniformInt(1, 4));
    return desc;
  }

  int64_t AddTask(TaskKind kind, const std::string& stem, int64_t rate, int64_t device = -1) {
    Task* task = plan_.add_tasks();
    const int64_t id = plan_.tasks_size() - 1;
    if (device < 0) device = rng_.UniformInt(0, plan_.devices_size() - 1);
    task->set_id(id);
    task->set_kind(kind);
    task->set_device(static_cast<int32_t>(device));
    task->set_name(stem + std::to_string(id) + "@" + std::to_string(device));
    task->set_pass(plan::PASS_FORWARD);
    task->set_flops(static_cast<double>(rng_.UniformInt(0, 1000)));
    rate_.push_back(rate);
    return id;
  }

  // A register of `producer`; a data one (desc given) joins the pool of consumable ones.
  int64_t Produce(int64_t producer, const plan::TensorDesc* desc, bool pool = true) {
    Regst* regst = plan_.add_regsts();
    const int64_t id = plan_.regsts_size() - 1;
    regst->set_id(id);
    regst->set_producer(producer);
    regst->set_slots(static_cast<int32_t>(rng_.UniformInt(1, std::max(1, options_.max_slots))));
    if (desc != nullptr) {
      *regst->mutable_tensor() = *desc;
      int64_t numel = 1;
      for (int64_t d : desc->shape()) numel *= d;
      regst->set_bytes_per_slot(numel * (desc->dtype() == plan::DTYPE_F64 ? 8 : 4));
      Task* task = plan_.mutable_tasks(producer);
      if (task->kind() != plan::ACC && task->kind() != plan::REPEAT &&
          task->kind() != plan::COLLECTIVE) {
        *task->mutable_op()->add_outputs() = *desc;
      }
    }
    plan_.mutable_tasks(producer)->add_produced_regsts(id);
    if (pool) (desc ? data_ : control_).push_back({id, rate_[producer]});
    return id;
  }

  void Consume(int64_t task, int64_t regst) {
    plan_.mutable_tasks(task)->add_consumed_regsts(regst);
    plan_.mutable_regsts(regst)->add_consumers(task);
    ++consumed_count_[regst];
    const plan::TensorDesc& desc = plan_.regsts(regst).tensor();
    const TaskKind kind = plan_.tasks(task).kind();
    if (desc.dtype() != plan::DTYPE_UNSPECIFIED && (kind == plan::COMPUTE || kind == plan::SINK)) {
      plan::OpDesc* op = plan_.mutable_tasks(task)->mutable_op();
      *op->add_inputs() = desc;
      if (with_regions_) {
        *op->add_input_logical() = desc;
        plan::RegionDesc* region = op->add_input_regions();
        for (int64_t d : desc.shape()) {
          plan::Range* range = region->add_ranges();
          range->set_end(d);
        }
      }
    }
  }

  // Up to `count` distinct pool entries of `rate`, those nobody consumes yet first.
  std::vector<int64_t> Pick(const std::vector<Available>& pool, int64_t rate, int64_t count) {
    std::vector<int64_t> fresh, used;
    for (const Available& a : pool) {
      if (a.rate == rate) (consumed_count_[a.regst] == 0 ? fresh : used).push_back(a.regst);
    }
    std::vector<int64_t> picked;
    for (auto* list : {&fresh, &used}) {
      while (!list->empty() && static_cast<int64_t>(picked.size()) < count) {
        const int64_t i = rng_.UniformInt(0, list->size() - 1);
        picked.push_back((*list)[i]);
        list->erase(list->begin() + i);
      }
    }
    return picked;
  }

  bool HasRate(int64_t rate) const {
    return std::any_of(data_.begin(), data_.end(),
                       [&](const Available& a) { return a.rate == rate; });
  }

  void AddProducer(TaskKind kind, int64_t rate) {
    const bool source = kind == plan::SOURCE;
    const int64_t t = AddTask(kind, source ? "src" : "var", rate);
    plan_.mutable_tasks(t)->mutable_op()->set_type(source ? "test_source" : "test_variable");
    for (int64_t k = source ? rng_.UniformInt(1, 2) : 1; k > 0; --k) {
      const plan::TensorDesc desc = RandomDesc();
      Produce(t, &desc);
    }
  }

  void AddSomething(int64_t budget) {
    const bool variables = options_.rate_changes || micro_ == 1;
    const int64_t choice = rng_.UniformInt(0, 8);
    if (choice == 0 && plan_.tasks_size() < 3) return AddProducer(plan::SOURCE, micro_);
    if (choice == 1 && variables) return AddProducer(plan::VARIABLE, 1);
    if (choice == 2 && options_.rate_changes && HasRate(1)) return AddRateChange(plan::REPEAT);
    if (choice == 3 && options_.rate_changes && HasRate(micro_)) return AddRateChange(plan::ACC);
    if (choice == 4 && plan_.devices_size() >= 2 &&
        plan_.tasks_size() + 3 * plan_.devices_size() + 2 <= budget) {
      return AddCollective();
    }
    AddCompute();
  }

  void AddCompute() {
    const int64_t rate = HasRate(micro_) && (!HasRate(1) || rng_.UniformInt(0, 1)) ? micro_ : 1;
    with_regions_ = rng_.UniformInt(0, 1) == 1;
    const int64_t t = AddTask(plan::COMPUTE, "op", rate);
    plan::OpDesc* op = plan_.mutable_tasks(t)->mutable_op();
    op->set_type("test_op");
    plan::Attr* attr = op->add_attrs();
    attr->set_name("seed");
    attr->set_i(t);
    for (int64_t r : Pick(data_, rate, rng_.UniformInt(1, 3))) Consume(t, r);
    if (rng_.UniformInt(0, 3) == 0) {
      for (int64_t r : Pick(control_, rate, 1)) Consume(t, r);
    }
    for (int64_t k = rng_.UniformInt(1, 2); k > 0; --k) {
      const plan::TensorDesc desc = RandomDesc();
      Produce(t, &desc);
    }
    if (rng_.UniformInt(0, 3) == 0) Produce(t, nullptr);
  }

  void AddRateChange(TaskKind kind) {
    const bool acc = kind == plan::ACC;
    const int64_t from = acc ? micro_ : 1;
    const int64_t in = Pick(data_, from, 1).at(0);
    // Often on its input's device, as compiled Plans have it (a REPEAT may then read in place).
    const int64_t device = rng_.UniformInt(0, 1) == 0
                               ? plan_.tasks(plan_.regsts(in).producer()).device()
                               : int64_t{-1};
    const int64_t t = AddTask(kind, acc ? "acc" : "rep", acc ? 1 : micro_, device);
    Consume(t, in);
    if (acc) plan_.mutable_tasks(t)->set_acc_count(micro_);
    if (!acc) plan_.mutable_tasks(t)->set_repeat_count(micro_);
    const plan::TensorDesc desc = plan_.regsts(in).tensor();
    Produce(t, &desc);
  }

  // An all_reduce over a random ordered subset of at least two devices. Either every member
  // reads one register, or (as a gradient's all-reduce does) each reads its own, made for it
  // alone on its device, which the memory plan may then sum in place.
  void AddCollective() {
    std::vector<int32_t> devices;
    for (int32_t d = 0; d < plan_.devices_size(); ++d) devices.push_back(d);
    for (size_t i = devices.size() - 1; i > 0; --i) {
      std::swap(devices[i], devices[rng_.UniformInt(0, i)]);
    }
    devices.resize(rng_.UniformInt(2, devices.size()));
    plan::CommGroup* group = plan_.add_groups();
    group->set_id(plan_.groups_size() - 1);
    for (int32_t d : devices) group->add_devices(d);
    const int64_t rate = HasRate(micro_) ? micro_ : 1;
    const int64_t in = Pick(data_, rate, 1).at(0);
    const plan::TensorDesc desc = plan_.regsts(in).tensor();
    const bool own_inputs = rng_.UniformInt(0, 1) == 1;
    for (size_t member = 0; member < devices.size(); ++member) {
      const int64_t input = own_inputs ? CopyOn(devices[member], rate, in, /*pool=*/false) : in;
      const int64_t t = AddTask(plan::COLLECTIVE, "allreduce", rate, devices[member]);
      Task* task = plan_.mutable_tasks(t);
      task->set_stream(1);
      task->mutable_collective()->set_kind(plan::ALL_REDUCE);
      task->mutable_collective()->set_reduce_op(plan::REDUCE_SUM);
      task->mutable_collective()->set_group(group->id());
      task->mutable_collective()->set_member(static_cast<int32_t>(member));
      Consume(t, input);
      Produce(t, &desc);
    }
    // Work each member's device can do while the all-reduce runs, so that it floats.
    if (own_inputs && rng_.UniformInt(0, 1) == 1) {
      for (int32_t d : devices) CopyOn(d, rate, in, /*pool=*/true);
    }
  }

  // A compute task on `device` reading `in` into a register of the same tensor; returns it.
  int64_t CopyOn(int32_t device, int64_t rate, int64_t in, bool pool) {
    const int64_t t = AddTask(plan::COMPUTE, "op", rate, device);
    plan::OpDesc* op = plan_.mutable_tasks(t)->mutable_op();
    op->set_type("test_op");
    plan::Attr* attr = op->add_attrs();
    attr->set_name("seed");
    attr->set_i(t);
    with_regions_ = false;
    Consume(t, in);
    const plan::TensorDesc desc = plan_.regsts(in).tensor();
    return Produce(t, &desc, pool);
  }

  // A sink for each rate with registers nobody consumes (one at least).
  void AddSinks() {
    bool added = false;
    for (int64_t rate : {micro_, int64_t{1}}) {
      std::vector<int64_t> fresh;
      for (const Available& a : data_) {
        if (a.rate == rate && consumed_count_[a.regst] == 0) fresh.push_back(a.regst);
      }
      if (fresh.empty()) continue;
      added = true;
      const int64_t t = AddTask(plan::SINK, "sink", rate);
      plan_.mutable_tasks(t)->mutable_op()->set_type("test_sink");
      with_regions_ = false;
      for (int64_t r : Pick(data_, rate, std::min<int64_t>(3, fresh.size()))) Consume(t, r);
    }
    if (!added) {
      const int64_t t = AddTask(plan::SINK, "sink", data_[0].rate);
      Consume(t, data_[0].regst);
    }
  }

  // Tasks reachable from `from` (all registers, lagged ones too); with `through_acc`, only
  // those reached by a path that passes an ACC.
  std::vector<bool> Reachable(int64_t from, bool through_acc) const {
    std::vector<int> state(plan_.tasks_size(), 0);  // bit 1: reached, bit 2: reached via ACC
    std::function<void(int64_t, bool)> visit = [&](int64_t t, bool acc) {
      const int bit = acc ? 2 : 1;
      if (state[t] & bit) return;
      state[t] |= bit;
      acc = acc || plan_.tasks(t).kind() == plan::ACC;
      for (int64_t r : plan_.tasks(t).produced_regsts()) {
        for (int64_t c : plan_.regsts(r).consumers()) visit(c, acc);
      }
    };
    visit(from, false);
    std::vector<bool> out(state.size());
    for (size_t t = 0; t < state.size(); ++t) out[t] = (state[t] & (through_acc ? 2 : 1)) != 0;
    return out;
  }

  // A lagged register from a later COMPUTE back to an earlier one of the same rate. A loop
  // through an ACC would wait for a whole step it cannot see yet, so it is never drawn.
  void AddLoop() {
    std::vector<int64_t> computes;
    for (const Task& task : plan_.tasks()) {
      if (task.kind() == plan::COMPUTE) computes.push_back(task.id());
    }
    if (computes.size() < 2) return;
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t a : computes) {
      const std::vector<bool> via_acc = Reachable(a, true);
      for (int64_t b : computes) {
        if (b > a && rate_[b] == rate_[a] && !via_acc[b]) pairs.push_back({a, b});
      }
    }
    if (pairs.empty()) return;
    const auto [a, b] = pairs[rng_.UniformInt(0, pairs.size() - 1)];
    const bool control = rng_.UniformInt(0, 1) == 0;
    const plan::TensorDesc desc = RandomDesc();
    const int64_t r = Produce(b, control ? nullptr : &desc, /*pool=*/false);
    plan_.mutable_regsts(r)->set_lag(static_cast<int32_t>(rng_.UniformInt(1, 2)));
    with_regions_ = plan_.tasks(a).op().input_regions_size() > 0;
    Consume(a, r);
  }

  void PlanMemory() {
    for (int32_t d = 0; d < plan_.devices_size(); ++d) {
      plan::MemoryPlan* memory = plan_.add_memory();
      memory->set_device(d);
      int64_t offset = 0;
      for (const Regst& regst : plan_.regsts()) {
        if (plan_.tasks(regst.producer()).device() != d) continue;
        for (int32_t s = 0; s < regst.slots(); ++s) {
          plan::SlotOffset* slot = memory->add_offsets();
          slot->set_regst(regst.id());
          slot->set_slot(s);
          slot->set_offset(offset);
          // Slots start at the alignment the validator asks of every device.
          offset += (regst.bytes_per_slot() + plan::kSlotAlignment - 1) / plan::kSlotAlignment *
                    plan::kSlotAlignment;
        }
      }
      memory->set_arena_bytes(offset);
      memory->set_peak_bytes(offset);
    }
  }

  Rng& rng_;
  RandomPlanOptions options_;
  Plan plan_;
  int64_t micro_ = 1;
  bool with_regions_ = false;
  std::vector<int64_t> rate_;
  std::vector<Available> data_, control_;
  std::map<int64_t, int64_t> consumed_count_;
};

}  // namespace

plan::Plan RandomPlan(Rng& rng, const RandomPlanOptions& options) {
  return Generator(rng, options).Build();
}

int64_t SourcePieces(const plan::Plan& plan, int64_t task, int64_t steps) {
  if (task < 0 || task >= plan.tasks_size()) return 0;
  if (plan.tasks(task).kind() == plan::SOURCE) return plan.pieces_per_step() * steps;
  if (plan.tasks(task).kind() == plan::VARIABLE) return steps;
  return 0;
}

}  // namespace twinflow::testing
