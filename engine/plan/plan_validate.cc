#include "engine/plan/plan_validate.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/error.h"

namespace twinflow::plan {
namespace {

// Bounds on values a hostile file could set to anything; nothing here allocates per slot,
// piece or byte, but the executors would.
constexpr int64_t kMaxSlots = int64_t{1} << 20;
constexpr int64_t kMaxLag = int64_t{1} << 20;
constexpr int64_t kMaxPiecesPerStep = int64_t{1} << 20;
constexpr int64_t kMaxBytes = int64_t{1} << 50;
constexpr int kMaxRank = 16;
constexpr int kMaxStream = 1024;

[[noreturn]] void Fail(const std::string& message) { throw PlanError(message); }

std::string Clip(const std::string& text) {
  return text.size() <= 64 ? text : text.substr(0, 64) + "...";
}

std::string Str(int64_t v) { return std::to_string(v); }

bool SameDesc(const TensorDesc& a, const TensorDesc& b) {
  return a.dtype() == b.dtype() &&
         std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end());
}

std::string DescText(const TensorDesc& d) {
  std::string text = Clip(d.dtype()) + "[";
  for (int i = 0; i < d.shape_size() && i < kMaxRank + 1; ++i) {
    text += (i ? "," : "") + Str(d.shape(i));
  }
  return text + "]";
}

// Bytes of a (non-control) tensor description; `what` names it in messages.
int64_t TensorBytes(const TensorDesc& desc, const std::string& what) {
  if (desc.dtype().size() > 16) Fail(what + " has an unknown dtype '" + Clip(desc.dtype()) + "'");
  DType dtype;
  try {
    dtype = ParseDType(desc.dtype());
  } catch (const Error&) {
    Fail(what + " has an unknown dtype '" + desc.dtype() + "'");
  }
  if (desc.dtype() != DTypeName(dtype)) {
    Fail(what + " spells dtype '" + desc.dtype() + "' (write '" + DTypeName(dtype) + "')");
  }
  if (desc.shape_size() > kMaxRank)
    Fail(what + " has rank " + Str(desc.shape_size()) + " (at most 16)");
  int64_t numel = 1;
  for (int64_t dim : desc.shape()) {
    if (dim < 0) Fail(what + " has a negative dimension in shape " + DescText(desc));
    if (dim > 0 && numel > kMaxBytes / dim)
      Fail(what + " shape " + DescText(desc) + " is too large");
    numel *= dim;
  }
  if (numel > kMaxBytes / DTypeSize(dtype))
    Fail(what + " shape " + DescText(desc) + " is too large");
  return numel * DTypeSize(dtype);
}

// A region of `rank` axes with 0 <= begin <= end, whose extents equal `extents` when given.
void CheckRegion(const RegionDesc& region, const TensorDesc* logical, const TensorDesc& physical,
                 const std::string& what) {
  if (region.ranges_size() != physical.shape_size()) {
    Fail(what + " has " + Str(region.ranges_size()) + " ranges for a tensor of rank " +
         Str(physical.shape_size()));
  }
  for (int d = 0; d < region.ranges_size(); ++d) {
    const Range& r = region.ranges(d);
    if (r.begin() < 0 || r.end() < r.begin() ||
        (logical != nullptr && r.end() > logical->shape(d))) {
      Fail(what + " axis " + Str(d) + " range [" + Str(r.begin()) + ":" + Str(r.end()) +
           ") is not inside the logical shape" + (logical ? " " + DescText(*logical) : ""));
    }
    if (r.end() - r.begin() != physical.shape(d)) {
      Fail(what + " axis " + Str(d) + " range [" + Str(r.begin()) + ":" + Str(r.end()) +
           ") does not match the physical extent " + Str(physical.shape(d)));
    }
  }
}

bool RegionInside(const RegionDesc& inner, const RegionDesc& outer) {
  if (inner.ranges_size() != outer.ranges_size()) return false;
  for (int d = 0; d < inner.ranges_size(); ++d) {
    if (inner.ranges(d).begin() < outer.ranges(d).begin() ||
        inner.ranges(d).end() > outer.ranges(d).end()) {
      return false;
    }
  }
  return true;
}

class Validator {
 public:
  explicit Validator(const Plan& plan) : plan_(plan) {}

  // Sorted copies of every task's consumed list, so that membership tests stay O(log n) on
  // hostile plans with huge lists.
  bool Consumes(int64_t t, int64_t r) const {
    return std::binary_search(consumed_[t].begin(), consumed_[t].end(), r);
  }

  void Run() {
    CheckHeader();
    CheckDevicesAndGroups();
    CheckRegsts();
    CheckTaskReferences();
    CheckCrossReferences();
    for (int64_t t = 0; t < plan_.tasks_size(); ++t) CheckTaskKind(t);
    CheckCollectives();
    CheckAcyclic();
    CheckMemory();
    CheckBindings();
  }

 private:
  std::string TaskText(int64_t t) const {
    return "task " + Str(t) + " '" + Clip(plan_.tasks(t).name()) + "'";
  }
  std::string RegstText(int64_t r) const { return "regst " + Str(r); }
  bool IsControl(int64_t r) const { return plan_.regsts(r).tensor().dtype().empty(); }
  int64_t NumDevices() const { return plan_.devices_size(); }

  void CheckHeader() const;
  void CheckDevicesAndGroups() const;
  void CheckRegsts() const;
  void CheckTaskReferences();
  void CheckCrossReferences() const;
  void CheckTaskKind(int64_t t) const;
  void CheckCompute(int64_t t, const std::vector<int64_t>& in,
                    const std::vector<int64_t>& out) const;
  void CheckTransfers(int64_t t, const std::vector<int64_t>& out) const;
  void CheckCollectives() const;
  void CheckAcyclic() const;
  void CheckMemory() const;
  void CheckBindings() const;

  const Plan& plan_;
  std::vector<std::vector<int64_t>> consumed_;
};

void Validator::CheckHeader() const {
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
  std::set<std::pair<std::string, int64_t>> seen;
  for (int64_t d = 0; d < NumDevices(); ++d) {
    const Device& device = plan_.devices(d);
    const std::string what =
        "device " + Str(d) + " (" + Clip(device.type()) + ":" + Str(device.index()) + ")";
    if (device.id() != d) Fail(what + " has id " + Str(device.id()) + ", expected its index");
    if (device.type() != "cpu" && device.type() != "cuda") Fail(what + " has an unknown type");
    if (device.index() < 0) Fail(what + " has a negative index");
    if (device.rank() < 0 ||
        (plan_.cluster().ranks() > 0 && device.rank() >= plan_.cluster().ranks())) {
      Fail(what + " has rank " + Str(device.rank()) + ", outside the cluster's " +
           Str(plan_.cluster().ranks()) + " ranks");
    }
    if (!seen.insert({device.type(), device.index()}).second) Fail(what + " appears twice");
  }
  for (int64_t g = 0; g < plan_.groups_size(); ++g) {
    const CommGroup& group = plan_.groups(g);
    if (group.id() != g) Fail("comm group " + Str(g) + " has id " + Str(group.id()));
    if (group.devices_size() == 0) Fail("comm group " + Str(g) + " has no devices");
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
    const std::string what = RegstText(r);
    if (regst.id() != r) Fail(what + " has id " + Str(regst.id()) + ", expected its index");
    if (regst.producer() < 0 || regst.producer() >= plan_.tasks_size()) {
      Fail(what + " names producer task " + Str(regst.producer()) + ", which does not exist");
    }
    for (int i = 0; i < regst.consumers_size(); ++i) {
      const int64_t c = regst.consumers(i);
      if (c < 0 || c >= plan_.tasks_size())
        Fail(what + " names consumer task " + Str(c) + ", which does not exist");
      if (i > 0 && c <= regst.consumers(i - 1))
        Fail(what + " consumers are not ascending without repeats");
    }
    if (regst.slots() < 1 || regst.slots() > kMaxSlots) {
      Fail(what + " (of " + TaskText(regst.producer()) + ") has " + Str(regst.slots()) +
           " slots (expected 1 to 2^20)");
    }
    if (regst.lag() < 0 || regst.lag() > kMaxLag) Fail(what + " has lag " + Str(regst.lag()));
    if (regst.tensor().dtype().empty()) {
      if (regst.tensor().shape_size() != 0 || regst.bytes_per_slot() != 0) {
        Fail(what + " is a control register (no dtype) but has a shape or " +
             Str(regst.bytes_per_slot()) + " bytes per slot");
      }
      continue;
    }
    const int64_t bytes = TensorBytes(regst.tensor(), what);
    if (regst.bytes_per_slot() != bytes) {
      Fail(what + " has " + Str(regst.bytes_per_slot()) + " bytes per slot, but its tensor " +
           DescText(regst.tensor()) + " needs " + Str(bytes));
    }
  }
}

void Validator::CheckTaskReferences() {
  for (int64_t t = 0; t < plan_.tasks_size(); ++t) {
    const Task& task = plan_.tasks(t);
    const std::string what = TaskText(t);
    if (task.id() != t) Fail(what + " has id " + Str(task.id()) + ", expected its index");
    if (!TaskKind_IsValid(task.kind()) || task.kind() == TASK_KIND_UNSPECIFIED) {
      Fail(what + " has no valid kind (" + Str(task.kind()) + ")");
    }
    if (task.device() < 0 || task.device() >= NumDevices()) {
      Fail(what + " is on device " + Str(task.device()) + ", which does not exist");
    }
    if (task.stream() < 0 || task.stream() >= kMaxStream)
      Fail(what + " has stream " + Str(task.stream()));
    for (const auto* list : {&task.consumed_regsts(), &task.produced_regsts()}) {
      for (int64_t r : *list) {
        if (r < 0 || r >= plan_.regsts_size())
          Fail(what + " names regst " + Str(r) + ", which does not exist");
      }
      std::vector<int64_t> sorted(list->begin(), list->end());
      std::sort(sorted.begin(), sorted.end());
      const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
      if (twice != sorted.end()) Fail(what + " lists " + RegstText(*twice) + " twice");
      if (list == &task.consumed_regsts()) consumed_.push_back(std::move(sorted));
    }
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

// Data (non-control) registers consumed and produced, and what each kind takes of them.
void Validator::CheckTaskKind(int64_t t) const {
  const Task& task = plan_.tasks(t);
  const std::string what = TaskText(t);
  std::vector<int64_t> in, out;
  bool lag0_input = false;
  for (int64_t r : task.consumed_regsts()) {
    if (!IsControl(r)) in.push_back(r);
    if (plan_.regsts(r).lag() == 0) lag0_input = true;
  }
  for (int64_t r : task.produced_regsts()) {
    if (!IsControl(r)) out.push_back(r);
  }
  const int64_t n_in = in.size(), n_out = out.size();
  auto expect = [&](bool ok, const std::string& rule) {
    if (!ok) {
      Fail(what + " (" + TaskKind_Name(task.kind()) + ") must have " + rule + "; it has " +
           Str(n_in) + " data inputs, " + Str(n_out) + " data outputs and " +
           Str(task.consumed_regsts_size()) + " consumed regsts in all");
    }
  };
  const TaskKind kind = task.kind();
  if (kind == SOURCE || kind == VARIABLE) {
    expect(task.consumed_regsts_size() == 0, "no consumed regsts");
    expect(kind == SOURCE ? n_out >= 1 : n_out == 1,
           kind == SOURCE ? "at least one data output" : "exactly one data output");
    return;
  }
  if (kind != RECV) expect(lag0_input, "a consumed regst with lag 0 (it paces the acts)");
  switch (kind) {
    case COMPUTE:
      CheckCompute(t, in, out);
      break;
    case COPY:
      expect(n_in >= 1 && n_out == 1, "at least one data input and one data output");
      CheckTransfers(t, out);
      break;
    case SEND:
    case RECV:
      if (kind == SEND) expect(n_in >= 1 && n_out == 0, "data inputs and no data output");
      if (kind == RECV) expect(n_in == 0 && n_out == 1, "no data input and one data output");
      if (task.peer() < 0 || task.peer() >= NumDevices() || task.peer() == task.device()) {
        Fail(what + " has peer device " + Str(task.peer()) + ", which is not another device");
      }
      if (task.tag() < 0 || task.issue_order() < 0)
        Fail(what + " has a negative tag or issue order");
      CheckTransfers(t, out);
      break;
    case COLLECTIVE:
      expect(n_in == 1 && n_out == 1, "one data input and one data output");
      break;
    case ACC:
    case REPEAT: {
      expect(n_in == 1 && n_out == 1, "one data input and one data output");
      const int64_t count = kind == ACC ? task.acc_count() : task.repeat_count();
      if (count < 1 || count > kMaxPiecesPerStep)
        Fail(what + " has count " + Str(count) + " (expected 1 to 2^20)");
      if (plan_.regsts(in[0]).lag() != 0) Fail(what + " consumes lagged " + RegstText(in[0]));
      if (!SameDesc(plan_.regsts(in[0]).tensor(), plan_.regsts(out[0]).tensor())) {
        Fail(what + " input and output tensors differ");
      }
      break;
    }
    case SINK:
      expect(n_in >= 1 && n_out == 0, "data inputs and no data output");
      break;
    case ASSIGN:
      expect(n_in == 2 && n_out == 0, "two data inputs (variable, value) and no data output");
      if (plan_.tasks(plan_.regsts(in[0]).producer()).kind() != VARIABLE) {
        Fail(what + " assigns to " + RegstText(in[0]) + ", which no VARIABLE task produces");
      }
      if (!SameDesc(plan_.regsts(in[0]).tensor(), plan_.regsts(in[1]).tensor())) {
        Fail(what + " assigns a value whose tensor differs from the variable's");
      }
      break;
    default:
      break;
  }
}

void Validator::CheckCompute(int64_t t, const std::vector<int64_t>& in,
                             const std::vector<int64_t>& out) const {
  const OpDesc& op = plan_.tasks(t).op();
  const std::string what = TaskText(t);
  if (op.type().empty()) Fail(what + " (COMPUTE) has no op type");
  for (int i = 0; i < op.attrs_size(); ++i) {
    const Attr& attr = op.attrs(i);
    if (attr.name().empty() || (i > 0 && attr.name() <= op.attrs(i - 1).name())) {
      Fail(what + " attrs are not named and sorted by name (at '" + Clip(attr.name()) + "')");
    }
    if (attr.value_case() == Attr::VALUE_NOT_SET)
      Fail(what + " attr '" + Clip(attr.name()) + "' has no value");
  }
  struct Side {
    const char* name;
    const std::vector<int64_t>& regsts;
    const google::protobuf::RepeatedPtrField<TensorDesc>& descs;
    const google::protobuf::RepeatedPtrField<RegionDesc>& regions;
    const google::protobuf::RepeatedPtrField<TensorDesc>& logical;
  };
  for (const Side& side :
       {Side{"input", in, op.inputs(), op.input_regions(), op.input_logical()},
        Side{"output", out, op.outputs(), op.output_regions(), op.output_logical()}}) {
    const int64_t n = side.regsts.size();
    if (side.descs.size() != n) {
      Fail(what + " op '" + Clip(op.type()) + "' has " + Str(side.descs.size()) + " " + side.name +
           " tensors but the task has " + Str(n) + " data " + side.name + " regsts");
    }
    if ((!side.regions.empty() && side.regions.size() != n) ||
        (!side.logical.empty() && side.logical.size() != n)) {
      Fail(what + " op has " + side.name + " regions or logical tensors for some " + side.name +
           "s only");
    }
    for (int64_t i = 0; i < n; ++i) {
      const std::string which = what + " " + side.name + " " + Str(i);
      const TensorDesc& regst_desc = plan_.regsts(side.regsts[i]).tensor();
      if (!SameDesc(side.descs[i], regst_desc)) {
        Fail(which + " is " + DescText(side.descs[i]) + " but " + RegstText(side.regsts[i]) +
             " holds " + DescText(regst_desc));
      }
      const TensorDesc* logical = side.logical.empty() ? nullptr : &side.logical[i];
      if (logical) {
        TensorBytes(*logical, which + " logical tensor");
        if (logical->shape_size() != regst_desc.shape_size() ||
            logical->dtype() != regst_desc.dtype()) {
          Fail(which + " logical tensor " + DescText(*logical) + " does not fit " +
               DescText(regst_desc));
        }
      }
      if (!side.regions.empty())
        CheckRegion(side.regions[i], logical, regst_desc, which + " region");
    }
  }
}

void Validator::CheckTransfers(int64_t t, const std::vector<int64_t>& out) const {
  const Task& task = plan_.tasks(t);
  if (task.kind() == COPY && task.transfers_size() == 0)
    Fail(TaskText(t) + " (COPY) has no transfers");
  for (int i = 0; i < task.transfers_size(); ++i) {
    const Transfer& tr = task.transfers(i);
    const std::string what = TaskText(t) + " transfer " + Str(i);
    // A RECV's source is the register its peer SEND reads, so it is not among its inputs.
    const bool known = task.kind() == RECV
                           ? tr.src_regst() >= 0 && tr.src_regst() < plan_.regsts_size()
                           : Consumes(t, tr.src_regst());
    if (!known || IsControl(tr.src_regst())) {
      Fail(what + " reads regst " + Str(tr.src_regst()) +
           ", which is not a data input of the task");
    }
    const TensorDesc& src = plan_.regsts(tr.src_regst()).tensor();
    CheckRegion(tr.src_region(), nullptr, src, what + " source region");
    if (!out.empty()) {
      const TensorDesc& dst = plan_.regsts(out[0]).tensor();
      if (dst.dtype() != src.dtype())
        Fail(what + " copies " + Clip(src.dtype()) + " into " + Clip(dst.dtype()));
      CheckRegion(tr.dst_region(), nullptr, dst, what + " destination region");
    }
    if (tr.region().ranges_size() != src.shape_size() ||
        !RegionInside(tr.region(), tr.src_region()) ||
        (!out.empty() && !RegionInside(tr.region(), tr.dst_region()))) {
      Fail(what + " region is not inside its source and destination regions");
    }
  }
}

void Validator::CheckCollectives() const {
  static const std::set<std::string> kKinds = {"all_reduce", "all_gather", "reduce_scatter",
                                               "all_to_all", "broadcast"};
  static const std::set<std::string> kReduceOps = {"", "sum", "max", "min"};
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> by_issue;
  for (int64_t t = 0; t < plan_.tasks_size(); ++t) {
    const Task& task = plan_.tasks(t);
    if (task.kind() != COLLECTIVE) continue;
    const CollectiveDesc& c = task.collective();
    const std::string what = TaskText(t);
    if (!kKinds.count(c.kind()))
      Fail(what + " has unknown collective kind '" + Clip(c.kind()) + "'");
    if (!kReduceOps.count(c.reduce_op()))
      Fail(what + " has unknown reduce op '" + Clip(c.reduce_op()) + "'");
    if (c.group() < 0 || c.group() >= plan_.groups_size()) {
      Fail(what + " names comm group " + Str(c.group()) + ", which does not exist");
    }
    const CommGroup& group = plan_.groups(c.group());
    if (c.member() < 0 || c.member() >= group.devices_size() ||
        group.devices(c.member()) != task.device()) {
      Fail(what + " on device " + Str(task.device()) + " claims member " + Str(c.member()) +
           " of comm group " + Str(c.group()) + ", which is not its device");
    }
    if (c.root() < 0 || c.root() >= group.devices_size())
      Fail(what + " has broadcast root " + Str(c.root()));
    int64_t rank = 0;
    for (int64_t r : task.produced_regsts()) {
      if (!IsControl(r)) rank = plan_.regsts(r).tensor().shape_size();
    }
    if (c.gather_axis() < 0 || c.scatter_axis() < 0 ||
        ((c.kind() == "all_gather" || c.kind() == "all_to_all") && c.gather_axis() >= rank) ||
        ((c.kind() == "reduce_scatter" || c.kind() == "all_to_all") && c.scatter_axis() >= rank)) {
      Fail(what + " gathers or scatters an axis outside its rank-" + Str(rank) + " tensor");
    }
    if (task.issue_order() < 0) Fail(what + " has a negative issue order");
    by_issue[{c.group(), task.issue_order()}].push_back(t);
  }
  for (const auto& [key, tasks] : by_issue) {
    const int64_t size = plan_.groups(key.first).devices_size();
    std::set<int32_t> members;
    for (int64_t t : tasks) {
      const CollectiveDesc& c = plan_.tasks(t).collective();
      if (!members.insert(c.member()).second ||
          c.kind() != plan_.tasks(tasks[0]).collective().kind()) {
        Fail(TaskText(t) + " repeats member " + Str(c.member()) +
             " or the kind differs in comm group " + Str(key.first) + " issue " + Str(key.second));
      }
    }
    if (static_cast<int64_t>(members.size()) != size) {
      Fail(TaskText(tasks[0]) + ": the collective at issue " + Str(key.second) + " of comm group " +
           Str(key.first) + " has " + Str(members.size()) + " of its " + Str(size) + " members");
    }
  }
}

// Kahn's algorithm over lag-0 edges; a lagged register closes a loop across pieces legally.
void Validator::CheckAcyclic() const {
  const int64_t n = plan_.tasks_size();
  std::vector<std::vector<int64_t>> succ(n), pred(n);
  std::vector<int64_t> indegree(n, 0);
  for (const Regst& regst : plan_.regsts()) {
    if (regst.lag() != 0) continue;
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

void Validator::CheckMemory() const {
  if (plan_.memory_size() != NumDevices()) {
    Fail("the plan has " + Str(plan_.memory_size()) + " memory plans for " + Str(NumDevices()) +
         " devices (expected one per device)");
  }
  std::vector<bool> planned(NumDevices(), false);
  std::vector<int64_t> offsets_of(plan_.regsts_size(), 0);
  for (const MemoryPlan& memory : plan_.memory()) {
    const int64_t d = memory.device();
    if (d < 0 || d >= NumDevices() || planned[d]) {
      Fail("memory plan for device " + Str(d) + " is for no device or a device planned twice");
    }
    planned[d] = true;
    const std::string what = "memory plan of device " + Str(d);
    const int64_t arena = memory.arena_bytes();
    if (arena < 0 || arena > kMaxBytes) Fail(what + " has arena of " + Str(arena) + " bytes");
    if (memory.peak_bytes() < 0 || memory.peak_bytes() > arena) {
      Fail(what + " has peak " + Str(memory.peak_bytes()) + " bytes outside its arena of " +
           Str(arena));
    }
    std::set<std::pair<int64_t, int32_t>> seen;
    for (const SlotOffset& s : memory.offsets()) {
      if (s.regst() < 0 || s.regst() >= plan_.regsts_size()) {
        Fail(what + " places regst " + Str(s.regst()) + ", which does not exist");
      }
      const Regst& regst = plan_.regsts(s.regst());
      const std::string slot = RegstText(s.regst()) + " slot " + Str(s.slot());
      if (plan_.tasks(regst.producer()).device() != d) {
        Fail(what + " places " + slot + ", which is produced on device " +
             Str(plan_.tasks(regst.producer()).device()));
      }
      if (s.slot() < 0 || s.slot() >= regst.slots())
        Fail(what + " places " + slot + ", beyond its slots");
      if (!seen.insert({s.regst(), s.slot()}).second) Fail(what + " places " + slot + " twice");
      if (s.offset() < 0 || s.offset() > arena - regst.bytes_per_slot()) {
        Fail(what + " places " + slot + " (" + Str(regst.bytes_per_slot()) + " bytes) at offset " +
             Str(s.offset()) + ", outside the arena of " + Str(arena) + " bytes");
      }
      ++offsets_of[s.regst()];
    }
  }
  for (int64_t r = 0; r < plan_.regsts_size(); ++r) {
    if (offsets_of[r] != plan_.regsts(r).slots()) {
      Fail(RegstText(r) + " of " + TaskText(plan_.regsts(r).producer()) + " has offsets for " +
           Str(offsets_of[r]) + " of its " + Str(plan_.regsts(r).slots()) + " slots");
    }
  }
}

void Validator::CheckBindings() const {
  for (const auto* list : {&plan_.feeds(), &plan_.fetches(), &plan_.variables()}) {
    for (const Binding& binding : *list) {
      const std::string what = "binding '" + Clip(binding.name()) + "'";
      if (binding.name().empty()) Fail("a binding has no name");
      TensorBytes(binding.logical(), what + " logical tensor");
      if (binding.reduce() != "" && binding.reduce() != "sum" && binding.reduce() != "max" &&
          binding.reduce() != "min") {
        Fail(what + " has unknown reduce op '" + Clip(binding.reduce()) + "'");
      }
      for (int i = 0; i < binding.parts_size(); ++i) {
        const BindingPart& part = binding.parts(i);
        const std::string which = what + " part " + Str(i);
        if (part.regst() < 0 || part.regst() >= plan_.regsts_size() || IsControl(part.regst())) {
          Fail(which + " names regst " + Str(part.regst()) + ", which is not a data register");
        }
        const TensorDesc& held = plan_.regsts(part.regst()).tensor();
        if (held.dtype() != binding.logical().dtype() ||
            held.shape_size() != binding.logical().shape_size()) {
          Fail(which + ": " + RegstText(part.regst()) + " holds " + DescText(held) +
               ", which does not fit the logical " + DescText(binding.logical()));
        }
        CheckRegion(part.region(), &binding.logical(), held, which + " region");
      }
    }
  }
}

}  // namespace

void ValidatePlan(const Plan& plan) { Validator(plan).Run(); }

}  // namespace twinflow::plan
