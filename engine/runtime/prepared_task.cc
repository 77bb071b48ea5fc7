#include "engine/runtime/prepared_task.h"

#include <map>
#include <tuple>

#include "engine/core/collective_kind.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/runtime/plan_tensors.h"

namespace twinflow::runtime {
namespace {

struct RegstDesc {
  Shape shape;
  DType dtype;
};

RegstDesc DescribeRegst(const plan::Plan& plan, int64_t id, const std::string& what) {
  if (id < 0 || id >= plan.regsts_size()) {
    throw PlanError(what + ": regst " + std::to_string(id) + " is out of range");
  }
  const plan::Regst& r = plan.regsts(static_cast<int>(id));
  return RegstDesc{ToShape(r.tensor(), what), ToDType(r.tensor().dtype(), what)};
}

// The data registers among `ids` (control registers carry no tensor and only order acts).
std::vector<int64_t> DataRegsts(const plan::Plan& plan,
                                const google::protobuf::RepeatedField<int64_t>& ids,
                                const std::string& what) {
  std::vector<int64_t> out;
  for (int64_t id : ids) {
    if (id < 0 || id >= plan.regsts_size()) {
      throw PlanError(what + ": regst " + std::to_string(id) + " is out of range");
    }
    if (IsDataRegst(plan.regsts(static_cast<int>(id)))) out.push_back(id);
  }
  return out;
}

void ExpectArity(const PreparedTask& t, size_t inputs, size_t outputs, const std::string& what) {
  if (t.inputs.size() != inputs || t.outputs.size() != outputs) {
    throw PlanError(what + ": a " + plan::TaskKind_Name(t.task->kind()) + " task takes " +
                    std::to_string(inputs) + " data input(s) and " + std::to_string(outputs) +
                    " output(s), it has " + std::to_string(t.inputs.size()) + " and " +
                    std::to_string(t.outputs.size()));
  }
}

void ExpectSameTensor(const plan::Plan& plan, int64_t a, int64_t b, const std::string& what) {
  const RegstDesc x = DescribeRegst(plan, a, what), y = DescribeRegst(plan, b, what);
  if (x.shape != y.shape || x.dtype != y.dtype) {
    throw PlanError(what + ": regst " + std::to_string(a) + " holds " + DTypeName(x.dtype) +
                    x.shape.ToString() + " but regst " + std::to_string(b) + " holds " +
                    DTypeName(y.dtype) + y.shape.ToString());
  }
}

// Regions and logical shapes of one side of an op; missing ones mean "the whole tensor".
void PrepareSide(const google::protobuf::RepeatedPtrField<plan::TensorDesc>& physical,
                 const google::protobuf::RepeatedPtrField<plan::RegionDesc>& regions,
                 const google::protobuf::RepeatedPtrField<plan::TensorDesc>& logical,
                 const std::string& what, std::vector<Region>& out_regions,
                 std::vector<Shape>& out_logical) {
  for (int i = 0; i < physical.size(); ++i) {
    const Shape shape = ToShape(physical[i], what);
    const Region region = i < regions.size() ? ToRegion(regions[i], what) : Region::Full(shape);
    const Shape whole = i < logical.size() ? ToShape(logical[i], what) : shape;
    if (region.shape() != shape || region.rank() != whole.rank() ||
        !Region::Full(whole).Contains(region)) {
      throw PlanError(what + ": tensor " + std::to_string(i) + " " + shape.ToString() + " at " +
                      region.ToString() + " does not fit its logical " + whole.ToString());
    }
    out_regions.push_back(region);
    out_logical.push_back(whole);
  }
}

void PrepareOp(const plan::Plan& plan, const kernels::KernelRegistry& kernels, PreparedTask& t,
               const std::string& what) {
  const plan::OpDesc& op = t.task->op();
  if (op.inputs_size() != static_cast<int>(t.inputs.size()) ||
      op.outputs_size() != static_cast<int>(t.outputs.size())) {
    throw PlanError(what + ": op '" + op.type() + "' has " + std::to_string(op.inputs_size()) +
                    " inputs and " + std::to_string(op.outputs_size()) + " outputs, the task " +
                    std::to_string(t.inputs.size()) + " and " + std::to_string(t.outputs.size()) +
                    " data registers");
  }
  auto check = [&](const plan::TensorDesc& desc, int64_t regst) {
    const RegstDesc r = DescribeRegst(plan, regst, what);
    if (ToShape(desc, what) != r.shape || ToDType(desc.dtype(), what) != r.dtype) {
      throw PlanError(what + ": op tensor " + plan::EnumName(desc.dtype()) +
                      ToShape(desc, what).ToString() + " does not match regst " +
                      std::to_string(regst) + " " + DTypeName(r.dtype) + r.shape.ToString());
    }
  };
  for (int i = 0; i < op.inputs_size(); ++i) check(op.inputs(i), t.inputs[i]);
  for (int i = 0; i < op.outputs_size(); ++i) check(op.outputs(i), t.outputs[i]);
  PrepareSide(op.inputs(), op.input_regions(), op.input_logical(), what, t.input_regions,
              t.input_logical);
  PrepareSide(op.outputs(), op.output_regions(), op.output_logical(), what, t.output_regions,
              t.output_logical);
  t.attrs = ToAttrs(op, what);
  if (t.inputs.empty() && t.outputs.empty()) {
    throw PlanError(what + ": op '" + op.type() + "' has no data input or output");
  }
  const int64_t key_regst = t.inputs.empty() ? t.outputs[0] : t.inputs[0];
  const DType dtype = DescribeRegst(plan, key_regst, what).dtype;
  try {
    const plan::Device& device = plan.devices(t.task->device());
    t.kernel =
        kernels.Find(kernels::KernelKey{op.type(), plan::FromProto(device.type(), what), dtype});
  } catch (const Error& e) {
    RethrowPrefixed(e, what + ": ");
  }
}

// A source may produce several registers (the same data under different lags); a feed part
// names one of them, and every act writes the part's slice into each.
void PrepareSource(const plan::Plan& plan, PreparedTask& t, const std::string& what) {
  if (t.outputs.empty()) throw PlanError(what + ": a SOURCE task produces a data register");
  for (int64_t out : t.outputs) ExpectSameTensor(plan, t.outputs[0], out, what);
  for (int b = 0; b < plan.feeds_size(); ++b) {
    for (const plan::BindingPart& part : plan.feeds(b).parts()) {
      bool mine = false;
      for (int64_t out : t.outputs) mine |= part.regst() == out;
      if (!mine) continue;
      const Shape logical = ToShape(plan.feeds(b).logical(), what);
      const Region region = ToRegion(part.region(), what);
      if (region.rank() != logical.rank() || !Region::Full(logical).Contains(region) ||
          region.shape() != DescribeRegst(plan, t.outputs[0], what).shape ||
          ToDType(plan.feeds(b).logical().dtype(), what) !=
              DescribeRegst(plan, t.outputs[0], what).dtype) {
        throw PlanError(what + ": feed '" + plan.feeds(b).name() + "' region " + region.ToString() +
                        " of " + logical.ToString() + " does not fit its regst");
      }
      t.feed = b;
      t.feed_region = region;
      return;
    }
  }
  throw PlanError(what + ": no feed binding names its regst " + std::to_string(t.outputs[0]));
}

void PrepareCopy(const plan::Plan& plan, PreparedTask& t, const std::string& what) {
  const Shape dst_shape = DescribeRegst(plan, t.outputs[0], what).shape;
  for (const plan::Transfer& tr : t.task->transfers()) {
    bool consumed = false;
    for (int64_t id : t.task->consumed_regsts()) consumed |= id == tr.src_regst();
    if (!consumed) {
      throw PlanError(what + ": transfer from regst " + std::to_string(tr.src_regst()) +
                      ", which the task does not consume");
    }
    const RegstDesc src = DescribeRegst(plan, tr.src_regst(), what);
    const Region src_region = ToRegion(tr.src_region(), what);
    const Region dst_region = ToRegion(tr.dst_region(), what);
    const Region region = ToRegion(tr.region(), what);
    const int rank = region.rank();
    if (src_region.rank() != rank || dst_region.rank() != rank || src.shape.rank() != rank ||
        dst_shape.rank() != rank || src_region.shape() != src.shape ||
        dst_region.shape() != dst_shape || !src_region.Contains(region) ||
        !dst_region.Contains(region)) {
      throw PlanError(what + ": transfer of " + region.ToString() + " from " +
                      src_region.ToString() + " into " + dst_region.ToString() +
                      " does not fit its registers");
    }
    if (region.empty()) continue;
    t.copies.push_back(
        SlotCopy{tr.src_regst(), region.RelativeTo(src_region), region.RelativeTo(dst_region)});
  }
}

// A SEND packs the box of its one transfer; the RECV's register holds exactly that box.
void PreparePointToPoint(const plan::Plan& plan, PreparedTask& t, const std::string& what) {
  const bool send = t.task->kind() == plan::SEND;
  ExpectArity(t, send ? 1 : 0, send ? 0 : 1, what);
  if (t.task->transfers_size() != 1) throw PlanError(what + ": needs exactly one transfer");
  const plan::Transfer& tr = t.task->transfers(0);
  const RegstDesc src = DescribeRegst(plan, tr.src_regst(), what);
  const Region src_region = ToRegion(tr.src_region(), what);
  const Region box = ToRegion(tr.region(), what);
  if (src_region.shape() != src.shape || !src_region.Contains(box) ||
      (send && tr.src_regst() != t.inputs[0])) {
    throw PlanError(what + ": its transfer of " + box.ToString() + " does not fit regst " +
                    std::to_string(tr.src_regst()));
  }
  t.send_shape = box.shape();
  t.send_dtype = src.dtype;
  if (!send && DescribeRegst(plan, t.outputs[0], what).shape != box.shape()) {
    throw PlanError(what + ": its register does not hold the box " + box.ToString());
  }
  t.copies.push_back(
      SlotCopy{tr.src_regst(), box.RelativeTo(src_region), Region::Full(box.shape())});
}

void PrepareCollective(const plan::Plan& plan, PreparedTask& t, const std::string& what) {
  const plan::CollectiveDesc& c = t.task->collective();
  if (c.group() < 0 || c.group() >= plan.groups_size()) {
    throw PlanError(what + ": comm group " + std::to_string(c.group()) + " is out of range");
  }
  const plan::CommGroup& group = plan.groups(static_cast<int>(c.group()));
  t.group_size = group.devices_size();
  const int32_t rank = plan.devices(t.task->device()).rank();
  for (int32_t d : group.devices()) {
    if (d < 0 || d >= plan.devices_size()) {
      throw PlanError(what + ": comm group " + std::to_string(c.group()) + " has no device " +
                      std::to_string(d));
    }
    if (plan.devices(d).rank() == rank) ++t.local_members;
  }
  t.spans_ranks = t.local_members < t.group_size;
  if (c.member() < 0 || c.member() >= t.group_size ||
      group.devices(c.member()) != t.task->device()) {
    throw PlanError(what + ": is not member " + std::to_string(c.member()) + " of comm group " +
                    std::to_string(c.group()));
  }
  const CollectiveKind kind = plan::FromProto(c.kind(), what);
  if (kind == CollectiveKind::kBroadcast && (c.root() < 0 || c.root() >= t.group_size)) {
    throw PlanError(what + ": broadcast root " + std::to_string(c.root()) + " is not a member");
  }
  // Collectives that reduce nothing carry REDUCE_NONE; their reduce_op is never read.
  t.reduce_op = plan::FromProto(c.reduce_op(), what).value_or(ReduceOp::kSum);
}

PreparedTask Prepare(const plan::Plan& plan, const kernels::KernelRegistry& kernels,
                     const plan::Task& task) {
  const std::string what = TaskName(task);
  PreparedTask t;
  t.task = &task;
  t.inputs = DataRegsts(plan, task.consumed_regsts(), what);
  t.outputs = DataRegsts(plan, task.produced_regsts(), what);
  switch (task.kind()) {
    case plan::SOURCE:
      ExpectArity(t, 0, t.outputs.size(), what);
      PrepareSource(plan, t, what);
      break;
    case plan::VARIABLE:
      ExpectArity(t, 0, 1, what);
      if (plan.regsts(static_cast<int>(t.outputs[0])).slots() != 1) {
        throw PlanError(what + ": a variable's register has exactly one slot (its state)");
      }
      PrepareOp(plan, kernels, t, what);
      break;
    case plan::COMPUTE:
      PrepareOp(plan, kernels, t, what);
      break;
    case plan::COPY:
      if (t.outputs.size() != 1) ExpectArity(t, t.inputs.size(), 1, what);
      PrepareCopy(plan, t, what);
      break;
    case plan::COLLECTIVE:
      // An all_reduce bucket reduces input k into output k (plan.proto's CollectiveDesc).
      if (t.inputs.size() < 2 || task.collective().kind() != plan::ALL_REDUCE)
        ExpectArity(t, 1, 1, what);
      ExpectArity(t, t.inputs.size(), t.inputs.size(), what);
      for (size_t k = 0; t.inputs.size() > 1 && k < t.inputs.size(); ++k)
        ExpectSameTensor(plan, t.inputs[k], t.outputs[k], what);
      PrepareCollective(plan, t, what);
      break;
    case plan::SEND:
    case plan::RECV:
      PreparePointToPoint(plan, t, what);
      break;
    case plan::ACC:
    case plan::REPEAT:
      ExpectArity(t, 1, 1, what);
      ExpectSameTensor(plan, t.inputs[0], t.outputs[0], what);
      break;
    case plan::SINK:
      ExpectArity(t, 1, 0, what);
      break;
    case plan::ASSIGN:
      ExpectArity(t, 2, 0, what);
      ExpectSameTensor(plan, t.inputs[0], t.inputs[1], what);
      break;
    default:
      throw PlanError(what + ": unknown task kind " + plan::TaskKind_Name(task.kind()));
  }
  return t;
}

// Every member of a collective must exist, or the others would wait for it for ever.
void CheckCollectiveMembers(const plan::Plan& plan) {
  std::map<std::tuple<int64_t, int64_t>, std::vector<int>> members;
  for (const plan::Task& task : plan.tasks()) {
    if (task.kind() != plan::COLLECTIVE) continue;
    members[{task.collective().group(), task.issue_order()}].push_back(task.collective().member());
  }
  for (const auto& [key, list] : members) {
    const auto [group, order] = key;
    std::vector<bool> seen(plan.groups(static_cast<int>(group)).devices_size(), false);
    for (int m : list) {
      if (seen[m]) {
        throw PlanError("collective " + std::to_string(order) + " of comm group " +
                        std::to_string(group) + " has member " + std::to_string(m) + " twice");
      }
      seen[m] = true;
    }
    if (list.size() != seen.size()) {
      throw PlanError("collective " + std::to_string(order) + " of comm group " +
                      std::to_string(group) + " has " + std::to_string(list.size()) + " of " +
                      std::to_string(seen.size()) + " members");
    }
  }
}

}  // namespace

std::string TaskName(const plan::Task& task) { return "task '" + task.name() + "'"; }

std::vector<PreparedTask> PrepareTasks(const plan::Plan& plan,
                                       const kernels::KernelRegistry& kernels) {
  std::vector<PreparedTask> tasks;
  tasks.reserve(plan.tasks_size());
  for (int i = 0; i < plan.tasks_size(); ++i) {
    if (plan.tasks(i).id() != i) {
      throw PlanError(TaskName(plan.tasks(i)) + ": id " + std::to_string(plan.tasks(i).id()) +
                      " is not its index " + std::to_string(i));
    }
    tasks.push_back(Prepare(plan, kernels, plan.tasks(i)));
  }
  CheckCollectiveMembers(plan);
  return tasks;
}

}  // namespace twinflow::runtime
