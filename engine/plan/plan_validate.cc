#include "engine/plan/plan_validate.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_fold.h"
#include "engine/plan/plan_io.h"
#include "engine/plan/plan_rates.h"
#include "engine/plan/plan_validate_internal.h"

namespace twinflow::plan {
namespace validation {

void Validator::Run() {
  CheckHeader();
  CheckDevicesAndGroups();
  CheckRegsts();
  CheckTaskReferences();
  CheckCrossReferences();
  for (int64_t t = 0; t < plan_.tasks_size(); ++t) CheckTaskKind(t);
  CheckCollectives();
  CheckRanks();
  CheckAcyclic();
  CheckMemory();
  CheckBindings();
}

void Validator::CheckHeader() const {
  // plan_io checks the version of every file before its hash; a Plan built in memory by an
  // older tool is caught here.
  if (plan_.version() != kPlanVersion) {
    Fail("plan version " + Str(plan_.version()) + " is not supported (this build reads version " +
         Str(kPlanVersion) + ")");
  }
  if (plan_.pieces_per_step() < 1 || plan_.pieces_per_step() > kMaxPiecesPerStep) {
    Fail("pieces_per_step " + Str(plan_.pieces_per_step()) + " is not in [1, 2^20]");
  }
  const ClusterSummary& cluster = plan_.cluster();
  if (cluster.ranks() < 0 || (cluster.devices() != 0 && cluster.devices() != NumDevices())) {
    Fail("cluster summary (" + Str(cluster.ranks()) + " ranks, " + Str(cluster.devices()) +
         " devices) does not match the plan's " + Str(NumDevices()) + " devices");
  }
}

void Validator::CheckDevicesAndGroups() const {
  const PlanFold& f = plan_.fold();
  if (f.copies() > 1 && (f.stride() <= 0 || f.block() != f.stride() * f.copies())) {
    Fail("the fold's " + Str(f.copies()) + " copies, stride " + Str(f.stride()) + " and block " +
         Str(f.block()) + " do not fit (block = stride x copies, stride > 0)");
  }
  if (f.copies() > 1 && plan_.cluster().ranks() > 1) Fail("a folded Plan runs on one rank");
  if (f.uneven_shards() && f.copies() <= 1) Fail("a Plan that is not folded has uneven_shards");
  const DeviceFold fold = DeviceFold::Of(plan_);
  std::set<std::pair<int, int64_t>> seen;
  for (int64_t d = 0; d < NumDevices(); ++d) {
    const Device& device = plan_.devices(d);
    const auto what = [&] {
      return "device " + Str(d) + " (" + EnumName(device.type()) + ":" + Str(device.index()) + ")";
    };
    if (device.id() != d) Fail(what() + " has id " + Str(device.id()) + ", expected its index");
    FromProto(device.type(), what());
    if (device.index() < 0) Fail(what() + " has a negative index");
    if (device.rank() < 0 ||
        (plan_.cluster().ranks() > 0 && device.rank() >= plan_.cluster().ranks())) {
      Fail(what() + " has rank " + Str(device.rank()) + ", outside the cluster's " +
           Str(plan_.cluster().ranks()) + " ranks");
    }
    if (!seen.insert({device.type(), device.index()}).second) Fail(what() + " appears twice");
    if (!fold.Stored(device.index())) Fail(what() + " is not in the folded Plan's copy 0");
  }
  for (int64_t g = 0; g < plan_.groups_size(); ++g) {
    const CommGroup& group = plan_.groups(g);
    if (group.id() != g) Fail("comm group " + Str(g) + " has id " + Str(group.id()));
    if (group.devices_size() == 0) Fail("comm group " + Str(g) + " has no devices");
    if (group.spans_copies() && !fold.folded())
      Fail("comm group " + Str(g) + " spans the copies of a Plan that is not folded");
    std::set<int32_t> members;
    for (int32_t d : group.devices()) {
      if (d < 0 || d >= NumDevices())
        Fail("comm group " + Str(g) + " names device " + Str(d) + ", which does not exist");
      if (!members.insert(d).second)
        Fail("comm group " + Str(g) + " lists device " + Str(d) + " twice");
    }
  }
}

void Validator::CheckRegsts() const {
  for (int64_t r = 0; r < plan_.regsts_size(); ++r) {
    const Regst& regst = plan_.regsts(r);
    const auto what = [&] { return RegstText(r); };
    if (regst.id() != r) Fail(what() + " has id " + Str(regst.id()) + ", expected its index");
    if (regst.producer() < 0 || regst.producer() >= plan_.tasks_size()) {
      Fail(what() + " names producer task " + Str(regst.producer()) + ", which does not exist");
    }
    for (int i = 0; i < regst.consumers_size(); ++i) {
      const int64_t c = regst.consumers(i);
      if (c < 0 || c >= plan_.tasks_size())
        Fail(what() + " names consumer task " + Str(c) + ", which does not exist");
      if (i > 0 && c <= regst.consumers(i - 1))
        Fail(what() + " consumers are not ascending without repeats");
    }
    if (regst.slots() < 1 || regst.slots() > kMaxSlots) {
      Fail(what() + " (of " + TaskText(regst.producer()) + ") has " + Str(regst.slots()) +
           " slots (expected 1 to 2^20)");
    }
    if (regst.lag() < 0 || regst.lag() > kMaxLag) Fail(what() + " has lag " + Str(regst.lag()));
    CheckOrderCounts(r);
    if (regst.tensor().dtype() == DTYPE_UNSPECIFIED) {
      if (regst.tensor().shape_size() != 0 || regst.bytes_per_slot() != 0) {
        Fail(what() + " is a control register (no dtype) but has a shape or " +
             Str(regst.bytes_per_slot()) + " bytes per slot");
      }
      continue;
    }
    const int64_t bytes = TensorBytes(regst.tensor(), what());
    if (regst.bytes_per_slot() != bytes) {
      Fail(what() + " has " + Str(regst.bytes_per_slot()) + " bytes per slot, but its tensor " +
           DescText(regst.tensor()) + " needs " + Str(bytes));
    }
  }
}

// An order register (plan.proto): a control register of lag 0 whose table rises from 0 to at
// most its length.
void Validator::CheckOrderCounts(int64_t r) const {
  const Regst& regst = plan_.regsts(r);
  if (regst.order_counts_size() == 0) return;
  const auto what = [&] { return RegstText(r); };
  if (regst.lag() != 0 || regst.tensor().dtype() != DTYPE_UNSPECIFIED) {
    Fail(what() + " has order counts, but a lag or a tensor (an order register is control, lag 0)");
  }
  int64_t previous = 0;
  for (int64_t count : regst.order_counts()) {
    if (count < previous || count > regst.order_counts_size()) {
      Fail(what() + " has order counts that are not non-decreasing within 0.." +
           Str(regst.order_counts_size()));
    }
    previous = count;
  }
}

void Validator::CheckTaskReferences() {
  for (int64_t t = 0; t < plan_.tasks_size(); ++t) {
    const Task& task = plan_.tasks(t);
    const auto what = [&] { return TaskText(t); };
    if (task.id() != t) Fail(what() + " has id " + Str(task.id()) + ", expected its index");
    if (!TaskKind_IsValid(task.kind()) || task.kind() == TASK_KIND_UNSPECIFIED) {
      Fail(what() + " has no valid kind (" + Str(task.kind()) + ")");
    }
    if (task.device() < 0 || task.device() >= NumDevices()) {
      Fail(what() + " is on device " + Str(task.device()) + ", which does not exist");
    }
    if (task.stream() < 0 || task.stream() >= kMaxStream)
      Fail(what() + " has stream " + Str(task.stream()));
    CheckTraits(t);
    for (const auto* list : {&task.consumed_regsts(), &task.produced_regsts()}) {
      for (int64_t r : *list) {
        if (r < 0 || r >= plan_.regsts_size())
          Fail(what() + " names regst " + Str(r) + ", which does not exist");
      }
      std::vector<int64_t> sorted(list->begin(), list->end());
      std::sort(sorted.begin(), sorted.end());
      const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
      if (twice != sorted.end()) Fail(what() + " lists " + RegstText(*twice) + " twice");
      if (list == &task.consumed_regsts()) consumed_.push_back(std::move(sorted));
    }
  }
}

// The traits the compiler sets (plan.proto Task fields 18 to 21).
void Validator::CheckTraits(int64_t t) const {
  const Task& task = plan_.tasks(t);
  const auto what = [&] { return TaskText(t); };
  if (!Pass_IsValid(task.pass()) || task.pass() == PASS_UNSPECIFIED) {
    Fail(what() + " has no valid pass (" + Str(task.pass()) + ")");
  }
  // Interleaved pipelines put several (virtual) stages on a device, each at least one task.
  if (task.stage() < 0 || task.stage() >= std::max<int64_t>(plan_.tasks_size(), 1)) {
    Fail(what() + " has pipeline stage " + Str(task.stage()) + " (a plan of " +
         Str(plan_.tasks_size()) + " tasks has fewer stages)");
  }
  if ((task.optimizer_update() || task.recomputes()) && task.kind() != COMPUTE) {
    Fail(what() + " (" + TaskKind_Name(task.kind()) +
         ") is marked an optimizer update or a recomputation, which only COMPUTE tasks are");
  }
  if (task.optimizer_update() && task.pass() != PASS_OPTIMIZER) {
    Fail(what() + " is an optimizer update outside the optimizer pass");
  }
}

void Validator::CheckCrossReferences() const {
  std::vector<int64_t> listed_by(plan_.regsts_size(), -1);
  for (int64_t t = 0; t < plan_.tasks_size(); ++t) {
    for (int64_t r : plan_.tasks(t).produced_regsts()) {
      if (listed_by[r] >= 0) {
        Fail(RegstText(r) + " has two producers: " + TaskText(listed_by[r]) + " and " +
             TaskText(t));
      }
      listed_by[r] = t;
      if (plan_.regsts(r).producer() != t) {
        Fail(TaskText(t) + " produces " + RegstText(r) + ", whose producer is " +
             TaskText(plan_.regsts(r).producer()));
      }
    }
    for (int64_t r : plan_.tasks(t).consumed_regsts()) {
      const auto& consumers = plan_.regsts(r).consumers();
      if (!std::binary_search(consumers.begin(), consumers.end(), t)) {
        Fail(TaskText(t) + " consumes " + RegstText(r) + ", which does not list it as a consumer");
      }
    }
  }
  for (int64_t r = 0; r < plan_.regsts_size(); ++r) {
    const Regst& regst = plan_.regsts(r);
    if (listed_by[r] < 0) {
      Fail(RegstText(r) + " is missing from the produced regsts of its producer " +
           TaskText(regst.producer()));
    }
    for (int64_t c : regst.consumers()) {
      if (!Consumes(c, r)) {
        Fail(RegstText(r) + " lists consumer " + TaskText(c) + ", which does not consume it");
      }
    }
  }
}

// Kahn's algorithm over lag-0 edges; a lagged register closes a loop across pieces legally.
void Validator::CheckAcyclic() const {
  const int64_t n = plan_.tasks_size();
  std::vector<std::vector<int64_t>> succ(n), pred(n);
  std::vector<int64_t> indegree(n, 0);
  for (const Regst& regst : plan_.regsts()) {
    if (!LinksOnePiece(regst)) continue;
    for (int64_t c : regst.consumers()) {
      succ[regst.producer()].push_back(c);
      pred[c].push_back(regst.producer());
      ++indegree[c];
    }
  }
  std::vector<int64_t> ready;
  for (int64_t t = 0; t < n; ++t) {
    if (indegree[t] == 0) ready.push_back(t);
  }
  int64_t done = 0;
  while (!ready.empty()) {
    const int64_t t = ready.back();
    ready.pop_back();
    ++done;
    for (int64_t s : succ[t]) {
      if (--indegree[s] == 0) ready.push_back(s);
    }
  }
  if (done == n) return;
  // Every task left has a predecessor left: walk predecessors until one repeats.
  int64_t t = 0;
  while (indegree[t] == 0) ++t;
  std::vector<int64_t> walk;
  std::vector<int64_t> position(n, -1);
  while (position[t] < 0) {
    position[t] = walk.size();
    walk.push_back(t);
    for (int64_t p : pred[t]) {
      if (indegree[p] > 0) {
        t = p;
        break;
      }
    }
  }
  std::string cycle;
  for (int64_t i = walk.size() - 1; i >= position[t] && cycle.size() < 600; --i) {
    cycle += TaskText(walk[i]) + " -> ";
  }
  Fail("the graph of one piece has a cycle (registers with lag 0): " + cycle + TaskText(t));
}

}  // namespace validation

void ValidatePlan(const Plan& plan) { validation::Validator(plan).Run(); }

}  // namespace twinflow::plan
