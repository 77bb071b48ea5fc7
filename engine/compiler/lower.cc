#include "engine/compiler/lower.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/compiler/lower_internal.h"
#include "engine/compiler/op_task.h"
#include "engine/compiler/pipeline_schedule.h"
#include "engine/compiler/plan_memory.h"
#include "engine/compiler/rates.h"
#include "engine/compiler/slot_counts.h"
#include "engine/compiler/task_chains.h"
#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_io.h"
#include "engine/sbp/boxing_planner.h"
#include "engine/sbp/slicing.h"

namespace twinflow::compiler {
namespace lowering {

plan::TensorDesc Desc(const Shape& shape, DType dtype) {
  plan::TensorDesc desc;
  for (int64_t d : shape.dims()) desc.add_shape(d);
  desc.set_dtype(plan::ToProto(dtype));
  return desc;
}

plan::RegionDesc Desc(const Region& region) {
  plan::RegionDesc desc;
  for (const Range& r : region.ranges) {
    plan::Range* range = desc.add_ranges();
    range->set_begin(r.begin);
    range->set_end(r.end);
  }
  return desc;
}

namespace {

void AddAttr(plan::OpDesc& op, const std::string& name, const AttrValue& value) {
  plan::Attr* attr = op.add_attrs();
  attr->set_name(name);
  if (const auto* i = std::get_if<int64_t>(&value)) attr->set_i(*i);
  if (const auto* f = std::get_if<double>(&value)) attr->set_f(*f);
  if (const auto* b = std::get_if<bool>(&value)) attr->set_b(*b);
  if (const auto* s = std::get_if<std::string>(&value)) attr->set_s(*s);
  if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) {
    plan::IntList* ints = attr->mutable_ints();  // set even when empty: a scalar's shape
    for (int64_t v : *list) ints->add_values(v);
  }
}

// The op's cost on this device's physical shapes.
graph::OpCost PhysicalCost(const graph::OpDef& def, const graph::OpNode& op,
                           const graph::LogicalGraph& graph,
                           const std::vector<graph::TensorMeta>& physical) {
  try {
    return def.cost(graph::OpContext{op.type, op.attrs, physical});
  } catch (const Error&) {
    // Attributes in logical terms (a reshape's target) do not fit the physical shapes:
    // take the logical cost in proportion to the inputs this device holds.
    std::vector<graph::TensorMeta> logical;
    double held = 0, whole = 0;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      logical.push_back(graph.tensor(op.inputs[i]).meta);
      held += static_cast<double>(physical[i].shape.numel());
      whole += static_cast<double>(logical.back().shape.numel());
    }
    graph::OpCost cost = def.cost(graph::OpContext{op.type, op.attrs, logical});
    const double share = whole > 0 ? held / whole : 1.0;
    cost.flops *= share;
    cost.bytes_read = static_cast<int64_t>(static_cast<double>(cost.bytes_read) * share);
    cost.bytes_written = static_cast<int64_t>(static_cast<double>(cost.bytes_written) * share);
    cost.gemm = {};  // the logical problem's shape is not this device's
    return cost;
  }
}

// Cost hints for the simulator: the op's work on the physical inputs of `task`.
void SetCostHints(plan::Task& task, const graph::OpNode& op, const graph::OpDef& def,
                  const graph::LogicalGraph& graph) {
  std::vector<graph::TensorMeta> physical;
  for (const plan::TensorDesc& in : task.op().inputs()) {
    std::vector<int64_t> dims(in.shape().begin(), in.shape().end());
    physical.push_back({Shape(dims), plan::FromProto(in.dtype(), task.name())});
  }
  const graph::OpCost cost = PhysicalCost(def, op, graph, physical);
  task.set_flops(cost.flops);
  task.set_bytes_moved(cost.bytes_read + cost.bytes_written);
  task.set_kernel_class(PlanKernelClass(def.kernel_class));
  if (cost.gemm.batch > 0) {
    plan::GemmShape& gemm = *task.mutable_gemm();
    gemm.set_batch(cost.gemm.batch);
    gemm.set_m(cost.gemm.m);
    gemm.set_n(cost.gemm.n);
    gemm.set_k(cost.gemm.k);
  }
}

}  // namespace

plan::Plan Lowerer::Run(const LowerOptions& options) {
  micro_batches_ = options.micro_batches;
  bucket_bytes_ = options.bucket_bytes;
  if (bucket_bytes_ < 0) throw PlanError("bucket_bytes must not be negative");
  schedule_ = options.schedule;
  const bool zero_bubble = schedule_ == parallel::Schedule::kZeroBubbleH1;
  read_by_input_pass_.assign(graph_.tensors().size(), false);
  for (const graph::OpNode& op : graph_.ops()) {
    if (!zero_bubble || PassOf(op) != plan::PASS_BACKWARD) continue;
    for (const TensorId t : op.inputs) read_by_input_pass_[t] = true;
  }
  devices_per_rank_ = options.devices_per_rank;
  if (devices_per_rank_ < 0) throw PlanError("devices_per_rank must not be negative");
  if (micro_batches_ < 1) throw PlanError("micro_batches must be positive");
  fold_ = options.fold;
  if (fold_.folded()) {
    if (fold_.stride <= 0 || fold_.block != fold_.stride * fold_.copies) {
      throw PlanError("a fold needs block = stride x copies, stride > 0");
    }
    if (devices_per_rank_ > 0) throw PlanError("a folded Plan runs on one rank");
    plan_.mutable_fold()->set_copies(fold_.copies);
    plan_.mutable_fold()->set_stride(fold_.stride);
    plan_.mutable_fold()->set_block(fold_.block);
  }
  plan_.set_pieces_per_step(micro_batches_);
  rates_ = OpRates(graph_, registry_);
  AssignStages();
  const std::vector<graph::OpId> order = graph_.TopologicalOrder();
  for (size_t i = 0; i < order.size(); ++i) {
    if (options.progress) options.progress(static_cast<int64_t>(i), std::ssize(order));
    LowerOp(graph_.op(order[i]));
  }
  SplitBuckets();
  SplitCrossRankReads();
  AddControlEdgesToAssigns();
  for (TensorId t : options.fetches) AddFetch(t);
  for (auto& regst : *plan_.mutable_regsts()) {
    std::sort(regst.mutable_consumers()->begin(), regst.mutable_consumers()->end());
  }
  plan_.set_serial_collectives(!options.overlap);
  const std::vector<TaskChain> chains = FindTaskChains(plan_);
  OrderChains(plan_, chains);
  if (parallel::InterleavesPasses(schedule_)) OrderOneFOneB(chains);
  DecideSlotCounts(plan_, chains, Schedule(options));
  PlanMemory(plan_, chains);
  int32_t ranks = 1;
  for (const plan::Device& d : plan_.devices()) ranks = std::max(ranks, d.rank() + 1);
  plan_.mutable_cluster()->set_ranks(ranks);
  plan_.mutable_cluster()->set_devices(plan_.devices_size());
  plan_.mutable_cluster()->set_description(ranks == 1 ? "in-process CPU devices"
                                                      : "CPU devices on MPI ranks");
  plan_.set_version(plan::kPlanVersion);
  if (options.stamp_content_hash) plan_.set_content_hash(plan::ContentHash(plan_));
  return std::move(plan_);
}

void Lowerer::AssignStages() {
  std::set<int32_t> used;
  for (const graph::OpId id : graph_.TopologicalOrder()) {
    const graph::OpNode& op = graph_.op(id);
    used.insert(op.stage);
    if (fold_.folded()) LastImages(op.placement);  // every placement holds every copy
    for (int64_t d = 0; d < op.placement.size(); ++d) {
      if (!Stored(op.placement, d)) continue;
      std::vector<int32_t>& stages = device_stages_[DeviceOf(op.placement.device(d))];
      if (std::find(stages.begin(), stages.end(), op.stage) == stages.end()) {
        stages.insert(std::upper_bound(stages.begin(), stages.end(), op.stage), op.stage);
      }
    }
  }
  int32_t expected = 0;
  for (const int32_t stage : used) {
    if (stage != expected) {
      throw PlanError("pipeline stage " + std::to_string(expected) + " has no op, but stage " +
                      std::to_string(stage) + " has: stages are numbered from 0 without gaps");
    }
    ++expected;
  }
  if (device_stages_.empty()) return;
  // Interleaving: every device holds chunks r, r + P, ..., of P = stages / chunks ranks.
  const auto chunks = static_cast<int32_t>(device_stages_.begin()->second.size());
  pipeline_ranks_ = std::max(1, expected / chunks);
  for (const auto& [device, stages] : device_stages_) {
    bool fits = static_cast<int32_t>(stages.size()) == chunks && expected % chunks == 0;
    for (size_t c = 0; fits && c < stages.size(); ++c) {
      fits = stages[c] == stages[0] + static_cast<int32_t>(c) * pipeline_ranks_;
    }
    if (!fits) {
      std::string list;
      for (int32_t stage : stages) list += (list.empty() ? "" : ", ") + std::to_string(stage);
      throw PlanError("device " + std::to_string(plan_.devices(device).index()) +
                      " holds pipeline stages " + list + ": with " + std::to_string(expected) +
                      " stages, each device must hold one, or the same number " +
                      std::to_string(chunks) + " of stages r, r + P, ... (interleaved)");
    }
  }
}

bool Lowerer::Holds(int32_t device, int32_t stage) const {
  const auto it = device_stages_.find(device);
  return it != device_stages_.end() &&
         std::binary_search(it->second.begin(), it->second.end(), stage);
}

int32_t Lowerer::DeviceOf(const sbp::DeviceId& id) {
  const auto it = devices_.find(id);
  if (it != devices_.end()) return it->second;
  if (!fold_.Stored(id.index)) throw PlanError(id.ToString() + " is not in a folded Plan's copy 0");
  plan::Device* device = plan_.add_devices();
  device->set_id(plan_.devices_size() - 1);
  device->set_type(plan::ToProto(id.type));
  device->set_index(id.index);
  device->set_rank(devices_per_rank_ > 0 ? static_cast<int32_t>(id.index / devices_per_rank_) : 0);
  return devices_[id] = device->id();
}

plan::Task& Lowerer::NewTask(plan::TaskKind kind, int32_t device, const std::string& name) {
  plan::Task* task = plan_.add_tasks();
  task->set_id(plan_.tasks_size() - 1);
  task->set_kind(kind);
  task->set_device(device);
  task->set_name(name);
  const auto stages = device_stages_.find(device);
  task->set_stage(Holds(device, current_stage_)    ? current_stage_
                  : Holds(device, source_stage_)   ? source_stage_
                  : stages != device_stages_.end() ? stages->second.front()
                                                   : 0);
  task->set_pass(current_pass_);
  return *task;
}

int64_t Lowerer::NewRegst(plan::Task& task, const Shape& shape, DType dtype, bool control) {
  regst_rate_.push_back(control ? Rate::kStep : current_rate_);
  plan::Regst* regst = plan_.add_regsts();
  regst->set_id(plan_.regsts_size() - 1);
  regst->set_producer(task.id());
  if (!control) {
    *regst->mutable_tensor() = Desc(shape, dtype);
    regst->set_bytes_per_slot(shape.numel() * DTypeSize(dtype));
  }
  task.add_produced_regsts(regst->id());
  return regst->id();
}

void Lowerer::Consume(plan::Task& task, int64_t regst) {
  task.add_consumed_regsts(regst);
  plan_.mutable_regsts(regst)->add_consumers(task.id());
}

plan::Pass Lowerer::PassOf(const graph::OpNode& op) const {
  const graph::OpRole role = registry_.Find(op.type).role;
  if (UpdatesState(role) || role == graph::OpRole::kGradientStatistic) return plan::PASS_OPTIMIZER;
  if (schedule_ == parallel::Schedule::kZeroBubbleH1 && op.weight_gradient)
    return plan::PASS_WEIGHT;
  return graph_.IsBackward(op.id) ? plan::PASS_BACKWARD : plan::PASS_FORWARD;
}

void Lowerer::LowerOp(const graph::OpNode& op) {
  const graph::NdSbpSignature& sig = assignment_.signatures[op.id];
  const graph::OpDef& def = registry_.Find(op.type);
  const plan::TaskKind kind = TaskKindOf(def.role);
  current_pass_ = PassOf(op);
  current_stage_ = op.stage;
  std::vector<std::vector<int64_t>> inputs;  // [input][parallel index]
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    inputs.push_back(
        RegstsFor(op.inputs[i], Layout{op.placement, sig.inputs[i]}, rates_[op.id], op.id));
  }
  current_rate_ = rates_[op.id];
  for (int64_t d = 0; d < op.placement.size(); ++d) {
    if (!Stored(op.placement, d)) {  // folded: an image of copy 0's task
      for (TensorId out : op.outputs) produced_[out].push_back(-1);
      continue;
    }
    const std::vector<int64_t> consumed = InputsReadOnce(op, inputs, d);
    plan::Task& task = NewTask(kind, DeviceOf(op.placement.device(d)),
                               op.name + "@" + std::to_string(op.placement.device(d).index));
    plan::OpDesc* desc = task.mutable_op();
    desc->set_type(op.type);
    for (const auto& [name, value] : op.attrs.values()) AddAttr(*desc, name, value);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const graph::TensorMeta& meta = graph_.tensor(op.inputs[i]).meta;
      const Region region = sbp::PhysicalRegion(meta.shape, {op.placement, sig.inputs[i]}, d);
      *desc->add_inputs() = Desc(region.shape(), meta.dtype);
      *desc->add_input_regions() = Desc(region);
      *desc->add_input_logical() = Desc(meta.shape, meta.dtype);
      Consume(task, consumed[i]);
    }
    if (kind == plan::ASSIGN) assigns_[inputs[0][d]] = task.id();
    if (kind == plan::COMPUTE) {
      task.set_recomputes(op.recomputed);
      task.set_optimizer_update(def.role == graph::OpRole::kOptimizerUpdate);
      if (def.cost) SetCostHints(task, op, def, graph_);
    }
    for (size_t o = 0; o < op.outputs.size(); ++o) {
      const graph::TensorMeta& meta = graph_.tensor(op.outputs[o]).meta;
      const Region region = sbp::PhysicalRegion(meta.shape, {op.placement, sig.outputs[o]}, d);
      CheckSymmetricShard(meta.shape, {op.placement, sig.outputs[o]}, d);
      *desc->add_outputs() = Desc(region.shape(), meta.dtype);
      *desc->add_output_regions() = Desc(region);
      *desc->add_output_logical() = Desc(meta.shape, meta.dtype);
      produced_[op.outputs[o]].push_back(NewRegst(task, region.shape(), meta.dtype));
    }
  }
  if (kind == plan::SOURCE) AddBinding(*plan_.add_feeds(), op.outputs[0], std::nullopt);
  if (kind == plan::VARIABLE) AddBinding(*plan_.add_variables(), op.outputs[0], std::nullopt);
}

std::vector<int64_t> Lowerer::InputsReadOnce(const graph::OpNode& op,
                                             const std::vector<std::vector<int64_t>>& inputs,
                                             int64_t d) {
  // A task consumes each register once (the actor counts pieces per register), so an op
  // reading one tensor twice, mul(x, x), gets a copy for the second read. Made before the
  // op's task: adding tasks moves the ones already made.
  const graph::NdSbpSignature& sig = assignment_.signatures[op.id];
  std::vector<int64_t> consumed;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    int64_t regst = inputs[i][d];
    if (std::find(consumed.begin(), consumed.end(), regst) != consumed.end()) {
      const graph::TensorMeta& meta = graph_.tensor(op.inputs[i]).meta;
      const Region region = sbp::PhysicalRegion(meta.shape, {op.placement, sig.inputs[i]}, d);
      plan::Task& copy = NewTask(plan::COPY, DeviceOf(op.placement.device(d)),
                                 op.name + "/input" + std::to_string(i) + "_copy@" +
                                     std::to_string(op.placement.device(d).index));
      Consume(copy, regst);
      AddTransfer(copy, regst, region, region, region, meta.dtype);
      regst = NewRegst(copy, region.shape(), meta.dtype);
    }
    consumed.push_back(regst);
  }
  return consumed;
}

std::vector<MicroStep> Lowerer::Sequence(int32_t device) const {
  const std::vector<int32_t>& stages = device_stages_.at(device);
  const int rank = stages.front() % pipeline_ranks_;
  return RankSequence(schedule_, pipeline_ranks_, static_cast<int>(stages.size()), micro_batches_,
                      rank);
}

SlotSchedule Lowerer::Schedule(const LowerOptions& options) const {
  SlotSchedule schedule;
  schedule.micro_batches = micro_batches_;
  for (const auto& [device, stages] : device_stages_) {
    const std::vector<int64_t> ahead =
        MicroBatchesAhead(schedule_, pipeline_ranks_, static_cast<int>(stages.size()),
                          micro_batches_, stages.front() % pipeline_ranks_);
    for (size_t c = 0; c < stages.size(); ++c) schedule.ahead[{device, stages[c]}] = ahead[c];
  }
  for (const Rate rate : regst_rate_) schedule.per_micro_batch.push_back(rate == Rate::kMicroBatch);
  return schedule;
}

void Lowerer::AddControlEdgesToAssigns() {
  for (const auto& [regst, assign] : assigns_) {
    const auto consumers = plan_.regsts(regst).consumers();  // a copy: we add registers
    for (int64_t reader : consumers) {
      // A REPEAT acts per micro-batch, so its control register would not match the
      // ASSIGN's per-step rate; it needs none: each of its pieces feeds a micro-batch whose
      // gradient the update waits for, so it has finished reading before the ASSIGN runs.
      if (reader == assign || plan_.tasks(reader).kind() == plan::REPEAT) continue;
      const int64_t control =
          NewRegst(*plan_.mutable_tasks(reader), Shape{}, DType::kF32, /*control=*/true);
      Consume(*plan_.mutable_tasks(assign), control);
    }
  }
}

void Lowerer::AddBinding(plan::Binding& binding, TensorId tensor, std::optional<ReduceOp> reduce) {
  const graph::TensorNode& node = graph_.tensor(tensor);
  const Layout layout = ProducedLayout(graph_, assignment_, tensor);
  binding.set_name(graph_.op(node.producer).name);
  *binding.mutable_logical() = Desc(node.meta.shape, node.meta.dtype);
  binding.set_layout(layout.ToString());
  binding.set_reduce(plan::ToProto(reduce));
  const Shape& hierarchy = layout.placement.hierarchy();
  for (int64_t d = 0; d < layout.placement.size(); ++d) {
    if (produced_.at(tensor)[d] < 0) continue;  // folded: not in copy 0
    plan::BindingPart* part = binding.add_parts();
    part->set_regst(produced_.at(tensor)[d]);
    *part->mutable_region() = Desc(sbp::PhysicalRegion(node.meta.shape, layout, d));
    // One replica of each broadcast contributes.
    bool first_replica = true;
    const std::vector<int64_t> coord = layout.placement.MeshCoord(d);
    for (int a = 0; a < hierarchy.rank(); ++a) {
      if (layout.nd_sbp[a].is_broadcast() && coord[a] != 0) first_replica = false;
    }
    part->set_contributes(first_replica);
  }
}

void Lowerer::AddFetch(TensorId tensor) {
  const Layout layout = ProducedLayout(graph_, assignment_, tensor);
  std::optional<ReduceOp> reduce;
  for (const sbp::Sbp& s : layout.nd_sbp.sbps()) {
    if (!s.is_partial()) continue;
    if (reduce && *reduce != s.op) {
      throw PlanError("fetched tensor '" + graph_.tensor(tensor).name +
                      "' is partial with two reduce ops: " + layout.ToString());
    }
    reduce = s.op;
  }
  plan::Binding& binding = *plan_.add_fetches();
  AddBinding(binding, tensor, reduce);
  binding.set_name(graph_.tensor(tensor).name);
  for (const plan::BindingPart& part : binding.parts()) {
    const plan::Task& producer = plan_.tasks(plan_.regsts(part.regst()).producer());
    const int32_t device = producer.device();
    current_pass_ = producer.pass();
    current_stage_ = producer.stage();
    plan::Task& sink = NewTask(plan::SINK, device, binding.name() + "/sink");
    Consume(sink, part.regst());
  }
}

void Lowerer::OrderOneFOneB(const std::vector<TaskChain>& chains) {
  if (micro_batches_ == 1) return;
  std::map<int32_t, ChainsByStep> by_device;
  for (const TaskChain& chain : chains) {
    if (chain.acts_per_step != micro_batches_) continue;
    const StepKind kind = chain.forward  ? StepKind::kForward
                          : chain.weight ? StepKind::kWeight
                                         : StepKind::kBackward;
    by_device[chain.device][{chain.stage, kind}] = &chain;
  }
  for (const auto& [device, mine] : by_device) {
    const std::vector<int32_t>& stages = device_stages_.at(device);
    if (stages.size() > 1 || schedule_ == parallel::Schedule::kZeroBubbleH1) {
      OrderBySequence(device, mine);
      continue;
    }
    const auto f = mine.find({stages[0], StepKind::kForward});
    const auto b = mine.find({stages[0], StepKind::kBackward});
    if (f == mine.end() || b == mine.end()) continue;
    const int64_t ahead = MicroBatchesInFlight(Sequence(device), 1)[0];
    AddControlRegst(plan_, b->second->tasks.back(), f->second->tasks.front(),
                    static_cast<int32_t>(std::max<int64_t>(1, ahead)));
  }
}

void Lowerer::OrderBySequence(int32_t device, const ChainsByStep& chains) {
  const std::vector<int32_t>& stages = device_stages_.at(device);
  // The schedule's micro-steps whose chains exist (an inference Plan has no backward ones).
  std::vector<const TaskChain*> order;
  for (const MicroStep& step : Sequence(device)) {
    const auto it = chains.find({stages.at(static_cast<size_t>(step.chunk)), step.kind});
    if (it != chains.end()) order.push_back(it->second);
  }
  // Each chain that directly follows another somewhere waits, act by act, for as many of the
  // other's acts as the schedule puts before it: the neighbours chain the whole order.
  std::set<std::pair<size_t, size_t>> neighbours;  // indices into `order`, first occurrences
  const auto first = [&](const TaskChain* chain) {
    return static_cast<size_t>(std::find(order.begin(), order.end(), chain) - order.begin());
  };
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i - 1] != order[i]) neighbours.insert({first(order[i - 1]), first(order[i])});
  }
  for (const auto& [x, y] : neighbours) {
    const int64_t regst =
        AddControlRegst(plan_, order[x]->tasks.back(), order[y]->tasks.front(), /*lag=*/0);
    int64_t before = 0;
    for (const TaskChain* chain : order) {
      if (chain == order[x]) ++before;
      if (chain == order[y]) plan_.mutable_regsts(regst)->add_order_counts(before);
    }
  }
}

}  // namespace lowering

plan::Plan LowerToPlan(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                       const SbpAssignment& assignment, const LowerOptions& options) {
  return lowering::Lowerer(graph, registry, assignment).Run(options);
}

}  // namespace twinflow::compiler
