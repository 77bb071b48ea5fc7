// What each task kind takes: data inputs and outputs, COMPUTE ops, COPY/SEND/RECV transfers,
// and COLLECTIVE groups, members and issue orders.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/collective_kind.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_validate_internal.h"

namespace twinflow::plan::validation {

// Data (non-control) registers consumed and produced, and what each kind takes of them.
void Validator::CheckTaskKind(int64_t t) const {
  const Task& task = plan_.tasks(t);
  const auto what = [&] { return TaskText(t); };
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
      Fail(what() + " (" + TaskKind_Name(task.kind()) + ") must have " + rule + "; it has " +
           Str(n_in) + " data inputs, " + Str(n_out) + " data outputs and " +
           Str(task.consumed_regsts_size()) + " consumed regsts in all");
    }
  };
  const TaskKind kind = task.kind();
  if (task.repeat_in_place() && kind != REPEAT) Fail(what() + " reads in place but is no REPEAT");
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
        Fail(what() + " has peer device " + Str(task.peer()) + ", which is not another device");
      }
      if (task.tag() < 0 || task.issue_order() < 0)
        Fail(what() + " has a negative tag or issue order");
      CheckTransfers(t, out);
      break;
    case COLLECTIVE:
      expect((n_in == 1 || (n_in > 1 && task.collective().kind() == ALL_REDUCE)) && n_out == n_in,
             "one data input and one data output (an all_reduce bucket: as many of each)");
      CheckCollectivePairs(t, in, out);
      break;
    case ACC:
    case REPEAT: {
      expect(n_in == 1 && n_out == 1, "one data input and one data output");
      CheckRateChange(t, in[0], out[0]);
      break;
    }
    case SINK:
      expect(n_in >= 1 && n_out == 0, "data inputs and no data output");
      break;
    case ASSIGN:
      expect(n_in == 2 && n_out == 0, "two data inputs (variable, value) and no data output");
      if (plan_.tasks(plan_.regsts(in[0]).producer()).kind() != VARIABLE) {
        Fail(what() + " assigns to " + RegstText(in[0]) + ", which no VARIABLE task produces");
      }
      if (!SameDesc(plan_.regsts(in[0]).tensor(), plan_.regsts(in[1]).tensor())) {
        Fail(what() + " assigns a value whose tensor differs from the variable's");
      }
      break;
    default:
      break;
  }
}

// An ACC's or REPEAT's count, its one unlagged input and its output of the same tensor.
void Validator::CheckRateChange(int64_t t, int64_t in, int64_t out) const {
  const Task& task = plan_.tasks(t);
  const auto what = [&] { return TaskText(t); };
  const int64_t count = task.kind() == ACC ? task.acc_count() : task.repeat_count();
  if (count < 1 || count > kMaxPiecesPerStep)
    Fail(what() + " has count " + Str(count) + " (expected 1 to 2^20)");
  if (plan_.regsts(in).lag() != 0) Fail(what() + " consumes lagged " + RegstText(in));
  if (task.repeat_in_place() && plan_.regsts(in).slots() != 1)
    Fail(what() + " reads in place from " + RegstText(in) + ", which has not one slot");
  if (!SameDesc(plan_.regsts(in).tensor(), plan_.regsts(out).tensor()))
    Fail(what() + " input and output tensors differ");
}

void Validator::CheckCompute(int64_t t, const std::vector<int64_t>& in,
                             const std::vector<int64_t>& out) const {
  const OpDesc& op = plan_.tasks(t).op();
  const auto what = [&] { return TaskText(t); };
  if (op.type().empty()) Fail(what() + " (COMPUTE) has no op type");
  for (int i = 0; i < op.attrs_size(); ++i) {
    const Attr& attr = op.attrs(i);
    if (attr.name().empty() || (i > 0 && attr.name() <= op.attrs(i - 1).name())) {
      Fail(what() + " attrs are not named and sorted by name (at '" + Clip(attr.name()) + "')");
    }
    if (attr.value_case() == Attr::VALUE_NOT_SET)
      Fail(what() + " attr '" + Clip(attr.name()) + "' has no value");
    // Learning rates, betas, epsilons, scales: a NaN would train on without a word.
    if (attr.value_case() == Attr::kF && !std::isfinite(attr.f())) {
      Fail(what() + " attr '" + Clip(attr.name()) + "' is " + std::to_string(attr.f()) +
           ": hyper-parameters must be finite");
    }
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
      Fail(what() + " op '" + Clip(op.type()) + "' has " + Str(side.descs.size()) + " " +
           side.name + " tensors but the task has " + Str(n) + " data " + side.name + " regsts");
    }
    if ((!side.regions.empty() && side.regions.size() != n) ||
        (!side.logical.empty() && side.logical.size() != n)) {
      Fail(what() + " op has " + side.name + " regions or logical tensors for some " + side.name +
           "s only");
    }
    for (int64_t i = 0; i < n; ++i) {
      const std::string which = what() + " " + side.name + " " + Str(i);
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
  // A COPY without transfers is legal: it writes zeros (a device's share of a partial sum made
  // from a replicated value, or an empty slice).
  for (int i = 0; i < task.transfers_size(); ++i) {
    const Transfer& tr = task.transfers(i);
    const auto what = [&] { return TaskText(t) + " transfer " + Str(i); };
    // A RECV's source is the register its peer SEND reads, so it is not among its inputs.
    const bool known = task.kind() == RECV
                           ? tr.src_regst() >= 0 && tr.src_regst() < plan_.regsts_size()
                           : Consumes(t, tr.src_regst());
    if (!known || IsControl(tr.src_regst())) {
      Fail(what() + " reads regst " + Str(tr.src_regst()) +
           ", which is not a data input of the task");
    }
    const int copies = std::max(1, plan_.fold().copies());
    if (tr.src_copy() < 0 || tr.src_copy() >= copies || (tr.src_copy() > 0 && task.kind() != COPY))
      Fail(what() + " reads copy " + Str(tr.src_copy()) + " of a Plan of " + Str(copies));
    const TensorDesc& src = plan_.regsts(tr.src_regst()).tensor();
    // Another copy's shard of an uneven split is up to one element shorter than copy 0's.
    const bool uneven = tr.src_copy() > 0 && plan_.fold().uneven_shards();
    CheckRegion(tr.src_region(), nullptr, src, what() + " source region", uneven ? 1 : 0);
    if (!out.empty()) {
      const TensorDesc& dst = plan_.regsts(out[0]).tensor();
      if (dst.dtype() != src.dtype())
        Fail(what() + " copies " + EnumName(src.dtype()) + " into " + EnumName(dst.dtype()));
      CheckRegion(tr.dst_region(), nullptr, dst, what() + " destination region");
    }
    if (tr.region().ranges_size() != src.shape_size() ||
        !RegionInside(tr.region(), tr.src_region()) ||
        (!out.empty() && !RegionInside(tr.region(), tr.dst_region()))) {
      Fail(what() + " region is not inside its source and destination regions");
    }
  }
}

// A bucket reduces input k into output k, so each pair is one tensor. An in-place all_reduce
// writes over its inputs, so nothing else may read them (the executors exempt each pair from
// their overlap checks).
void Validator::CheckCollectivePairs(int64_t t, const std::vector<int64_t>& in,
                                     const std::vector<int64_t>& out) const {
  const bool in_place = plan_.tasks(t).collective().in_place();
  for (size_t k = 0; in.size() > 1 && k < in.size(); ++k) {
    if (!SameDesc(plan_.regsts(in[k]).tensor(), plan_.regsts(out[k]).tensor())) {
      Fail(TaskText(t) + " is an all_reduce bucket whose input " + RegstText(in[k]) +
           " is not the tensor of its output " + RegstText(out[k]));
    }
  }
  for (size_t k = 0; in_place && k < in.size(); ++k) {
    const Regst& input = plan_.regsts(in[k]);
    if (plan_.tasks(t).collective().kind() != ALL_REDUCE || input.consumers_size() != 1 ||
        input.consumers(0) != t || !SameDesc(input.tensor(), plan_.regsts(out[k]).tensor())) {
      Fail(TaskText(t) + " is in place, but is not an all_reduce whose " + RegstText(in[k]) +
           " only it reads and whose output is the same tensor");
    }
  }
}

void Validator::CheckCollectives() const {
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> by_issue;
  for (int64_t t = 0; t < plan_.tasks_size(); ++t) {
    const Task& task = plan_.tasks(t);
    if (task.kind() != COLLECTIVE) continue;
    const CollectiveDesc& c = task.collective();
    const auto what = [&] { return TaskText(t); };
    // The validator's one switch on the kind: what it does with values and axes.
    const twinflow::CollectiveKind kind = FromProto(c.kind(), what());
    const std::optional<twinflow::ReduceOp> op = FromProto(c.reduce_op(), what());
    if (CollectiveReduces(kind) != op.has_value()) {
      Fail(what() + " (" + CollectiveKindName(kind) + ") has reduce op " + EnumName(c.reduce_op()) +
           (op ? ", but it reduces nothing" : ", but it reduces: sum, max or min"));
    }
    if (c.group() < 0 || c.group() >= plan_.groups_size()) {
      Fail(what() + " names comm group " + Str(c.group()) + ", which does not exist");
    }
    const CommGroup& group = plan_.groups(c.group());
    if (c.member() < 0 || c.member() >= group.devices_size() ||
        group.devices(c.member()) != task.device()) {
      Fail(what() + " on device " + Str(task.device()) + " claims member " + Str(c.member()) +
           " of comm group " + Str(c.group()) + ", which is not its device");
    }
    if (c.root() < 0 || c.root() >= group.devices_size())
      Fail(what() + " has broadcast root " + Str(c.root()));
    int64_t rank = 0;
    for (int64_t r : task.produced_regsts()) {
      if (!IsControl(r)) rank = plan_.regsts(r).tensor().shape_size();
    }
    if (c.gather_axis() < 0 || c.scatter_axis() < 0 ||
        (CollectiveGathersAxis(kind) && c.gather_axis() >= rank) ||
        (CollectiveScattersAxis(kind) && c.scatter_axis() >= rank)) {
      Fail(what() + " gathers or scatters an axis outside its rank-" + Str(rank) + " tensor");
    }
    if (task.issue_order() < 0) Fail(what() + " has a negative issue order");
    by_issue[{c.group(), task.issue_order()}].push_back(t);
  }
  for (const auto& [key, tasks] : by_issue) {
    const int64_t size = plan_.groups(key.first).devices_size();
    std::set<int32_t> members;
    const auto data_inputs = [&](int64_t t) {
      const auto& consumed = plan_.tasks(t).consumed_regsts();
      return std::count_if(consumed.begin(), consumed.end(),
                           [&](int64_t r) { return !IsControl(r); });
    };
    for (int64_t t : tasks) {
      const CollectiveDesc& c = plan_.tasks(t).collective();
      if (!members.insert(c.member()).second ||
          c.kind() != plan_.tasks(tasks[0]).collective().kind() ||
          data_inputs(t) != data_inputs(tasks[0])) {
        Fail(TaskText(t) + " repeats member " + Str(c.member()) + ", or its kind or its number " +
             "of tensors differs, in comm group " + Str(key.first) + " issue " + Str(key.second));
      }
    }
    if (static_cast<int64_t>(members.size()) != size) {
      Fail(TaskText(tasks[0]) + ": the collective at issue " + Str(key.second) + " of comm group " +
           Str(key.first) + " has " + Str(members.size()) + " of its " + Str(size) + " members");
    }
  }
}

}  // namespace twinflow::plan::validation
