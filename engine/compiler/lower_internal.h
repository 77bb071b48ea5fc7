#pragma once
// The Lowerer behind LowerToPlan (lower.h), shared by lower.cc and lower_boxing.cc; not for use
// elsewhere. lower.cc lowers ops, rate changes, bindings and the order; lower_boxing.cc turns the
// steps of a BoxingPlan into COLLECTIVE and COPY tasks; lower_ranks.cc splits reads across
// ranks into SEND and RECV.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/compiler/lower.h"
#include "engine/compiler/pipeline_schedule.h"
#include "engine/compiler/rates.h"
#include "engine/compiler/slot_counts.h"
#include "engine/compiler/task_chains.h"
#include "engine/core/reduce_op.h"
#include "engine/core/region.h"
#include "engine/graph/op_registry.h"
#include "engine/sbp/boxing_plan.h"
#include "engine/sbp/placement.h"

namespace twinflow::compiler::lowering {

using graph::TensorId;
using sbp::Layout;
using sbp::Placement;

plan::TensorDesc Desc(const Shape& shape, DType dtype);
plan::RegionDesc Desc(const Region& region);

class Lowerer {
 public:
  Lowerer(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
          const SbpAssignment& assignment)
      : graph_(graph), registry_(registry), assignment_(assignment) {}

  plan::Plan Run(const LowerOptions& options);

 private:
  // The pipeline stages on each device (every op's OpNode::stage, set when the graph was
  // built): one, or with an interleaved schedule r, r + P, ... (pipeline_schedule.h). Sets
  // pipeline_ranks_; a gap in the numbering or another pattern is a PlanError.
  void AssignStages();
  int32_t DeviceOf(const sbp::DeviceId& id);
  // A task on `device`, with the current pass and its stage: the op's being lowered where the
  // device holds that stage, else that of the tensor being boxed, else the device's first.
  plan::Task& NewTask(plan::TaskKind kind, int32_t device, const std::string& name);
  bool Holds(int32_t device, int32_t stage) const;

  // A register produced by `task` (its slots decided later, slot_counts.h), sized for
  // `shape`/`dtype` (empty: control), carrying data at the rate of the op being lowered.
  int64_t NewRegst(plan::Task& task, const Shape& shape, DType dtype, bool control = false);
  void Consume(plan::Task& task, int64_t regst);
  void LowerOp(const graph::OpNode& op);
  // The pass of op's tasks (plan.proto's Pass).
  plan::Pass PassOf(const graph::OpNode& op) const;

  // The registers holding `tensor` laid out as `layout` at `rate`, one per parallel index: the
  // producer's own, or those of the boxing that converts them (lowered once per layout and
  // rate). Gradients for the optimizer are summed over micro-batches (ACC) before their
  // boxing, so it runs once per step; step values for micro-batch ops are boxed once per step,
  // then repeated (REPEAT), once for `consumer`'s pass (forward or backward): each pass reads
  // its copies at its own pace.
  std::vector<int64_t> RegstsFor(TensorId tensor, const Layout& layout, Rate rate,
                                 graph::OpId consumer);
  static std::string BoxedKey(TensorId tensor, const Layout& layout, Rate rate);
  // The registers cached under `key` in boxed_, made by `make` the first time.
  std::vector<int64_t> Shared(const std::string& key,
                              const std::function<std::vector<int64_t>()>& make);

  // The boxing the SBP search planned for `consumer`'s read of `tensor` as `layout`: boxing is
  // planned once, in the search, and lowered as it is (PlanError if the search planned none).
  const sbp::BoxingPlan& PlannedBoxing(TensorId tensor, graph::OpId consumer,
                                       const Layout& layout) const;

  // One ACC (summing the step's micro-batches) or REPEAT (once per micro-batch; named
  // ".../repeat_backward@d" for the backward pass's) task per device of `layout`, copying the
  // registers' tensors.
  std::vector<int64_t> RateChange(const graph::TensorNode& node, const Layout& layout,
                                  const std::vector<int64_t>& current, plan::TaskKind kind,
                                  bool for_backward = false);

  // For the backward pass's REPEAT of a variable: a step-rate COPY of it, which the REPEAT
  // reads instead. The ASSIGN updates a variable in place once the update has its gradient,
  // which need not wait for the backward pass's last read of the weight (for the input's
  // gradient); the COPY is a reader the ASSIGN waits for (AddControlEdgesToAssigns). Other
  // registers (already boxed into their own memory) are returned as they are.
  std::vector<int64_t> Snapshot(const graph::TensorNode& node, const Layout& layout,
                                const std::vector<int64_t>& current);

  // Rank `device`'s micro-steps under 1F1B, interleaved or ZB-H1 (pipeline_schedule.h); its
  // stages are its chunks.
  std::vector<MicroStep> Sequence(int32_t device) const;
  // What DecideSlotCounts (slot_counts.h) needs of the lowering: the micro-batches each stage
  // of each device runs ahead, and which registers carry per-micro-batch data.
  SlotSchedule Schedule(const LowerOptions& options) const;

  // Every reader of a variable's register (an op, or the first step of a boxing that copies
  // it) tells the variable's ASSIGN when it is done with the step, so the update never
  // overwrites a value still to be read.
  void AddControlEdgesToAssigns();
  void AddBinding(plan::Binding& binding, TensorId tensor, std::optional<ReduceOp> reduce);
  void AddFetch(TensorId tensor);

  // 1F1B beyond slot counts: on each stage's device the forward chain's first task waits for
  // the backward chain's last task (stages - stage) micro-batches back, so at most that many
  // micro-batches are between their forward and their backward there. With several stages per
  // device (interleaved) or a weight pass (ZB-H1), order registers put the device's chains in
  // the schedule's exact order (OrderBySequence).
  using ChainsByStep = std::map<std::pair<int32_t, StepKind>, const TaskChain*>;
  void OrderOneFOneB(const std::vector<TaskChain>& chains);
  void OrderBySequence(int32_t device, const ChainsByStep& chains);

  // lower_boxing.cc: the tasks of step `index` of the boxing of `node`, from the registers
  // `current` (one per parallel index of step.from) to those it returns (of step.to).
  std::vector<int64_t> LowerStep(const graph::TensorNode& node, const sbp::BoxingStep& step,
                                 const std::vector<int64_t>& current, size_t index);
  // lower_ranks.cc: a COPY reading a register of another rank reads a RECV's instead, which a
  // SEND on the source device fills with the regions the COPY needs.
  void SplitCrossRankReads();
  int32_t RankOf(int32_t device) const;

  void AddTransfer(plan::Task& task, int64_t src_regst, const Region& src_region,
                   const Region& dst_region, const Region& region, DType dtype,
                   int32_t src_copy = 0);
  int64_t GroupOf(const Placement& placement, const std::vector<int64_t>& members,
                  bool spans_copies = false);

  // lower_fold.cc (LowerOptions::fold). Parallel index `j` of `placement` is in copy 0.
  bool Stored(const Placement& placement, int64_t j) const {
    return fold_.Stored(placement.device_ids()[j]);
  }
  // For each parallel index of `placement` in copy 0, the parallel index of its image in the
  // last copy (-1 for the others); FoldError unless every copy's images are in `placement`.
  const std::vector<int64_t>& LastImages(const Placement& placement);
  // FoldError unless parallel index `j` (copy 0) of `layout` holds a shard of `shape` as large
  // as its images do.
  void CheckSymmetricShard(const Shape& shape, const Layout& layout, int64_t j);
  // Parallel index `j` of `placement`, or in a folded Plan that of its device in copy 0 (the
  // copy of j's device besides); FoldError when `placement` lacks it.
  std::pair<int64_t, int32_t> InCopyZero(const Placement& placement, int64_t j);
  // The members of a collective step's group in copy 0: all of them (an ordinary group), some
  // (the group spans the copies: FoldError unless it is exactly their images) or none (an
  // image of a group of copy 0, lowered there).
  std::vector<int64_t> StoredMembers(const Placement& placement,
                                     const std::vector<int64_t>& members);

  // LowerOp's registers for device `d` of the op (`inputs` [input][parallel index]), one per
  // input, a COPY made for each repeated read.
  std::vector<int64_t> InputsReadOnce(const graph::OpNode& op,
                                      const std::vector<std::vector<int64_t>>& inputs, int64_t d);
  // LowerStep's lowering by step kind: `output` makes the step's register on destination j.
  using StepOutput = std::function<void(plan::Task& task, int64_t j)>;
  // A COLLECTIVE task a member of each group, the groups one issue order each.
  void LowerCollectiveStep(const sbp::BoxingStep& step, const std::vector<int64_t>& current,
                           const std::string& name, const StepOutput& output);
  // lower_buckets.cc: gradient buckets (LowerOptions::bucket_bytes). An all-reduce of a
  // gradient smaller than the cap, in the optimizer's pass, joins the bucket of its comm
  // group, dtype, reduce op, stage and rate: each member's task of the bucket's first gradient
  // takes its input and output too. Once every op is lowered, SplitBuckets cuts each into
  // buckets of the cap in the order the backward pass makes their gradients (DDP's order; the
  // first bucket kFirstBucketBytes, so that communication starts early). Their inputs are
  // gradients made in the backward pass (or their ACCs), which never depend on what the
  // optimizer's pass makes, so a bucket cannot wait for itself.
  using BucketKey = std::tuple<int64_t, int, int, int32_t, int>;
  struct Bucket {
    std::vector<int64_t> tasks;      // by member: the task holding every gradient so far
    std::vector<std::string> names;  // by gradient: its all-reduce's own name (no "@device")
  };
  std::optional<BucketKey> BucketKeyOf(const sbp::BoxingStep& step, int64_t group,
                                       const std::vector<int64_t>& inputs) const;
  bool IsGradient(int64_t regst) const;
  // The task that made gradient `regst` (an ACC's input's): its id orders the backward pass.
  int64_t GradientMaker(int64_t regst) const;
  void JoinBucket(Bucket& bucket, const std::string& name, const std::vector<int64_t>& members,
                  const std::vector<int64_t>& current, const StepOutput& output);
  void SplitBuckets();
  // The gradients of `bucket` (indices in join order) cut by the cap, in the backward's order.
  std::vector<std::vector<size_t>> CutBucket(const Bucket& bucket) const;
  // A COPY a device of the slice it keeps along the step's mesh axis.
  void LowerLocalSliceStep(const graph::TensorNode& node, const sbp::BoxingStep& step,
                           const std::vector<int64_t>& current, const std::string& name,
                           const StepOutput& output);
  // A COPY a destination of the regions it receives (send/recv or broadcast).
  void LowerCopyStep(const graph::TensorNode& node, const sbp::BoxingStep& step,
                     const std::vector<int64_t>& current, const std::string& name,
                     const StepOutput& output);

  const graph::LogicalGraph& graph_;
  const graph::OpRegistry& registry_;
  const SbpAssignment& assignment_;
  plan::Plan plan_;
  std::map<sbp::DeviceId, int32_t> devices_;
  std::map<TensorId, std::vector<int64_t>> produced_;
  std::map<std::string, std::vector<int64_t>> boxed_;
  std::map<std::vector<int32_t>, int64_t> groups_;
  std::map<int64_t, int64_t> assigns_;  // variable regst -> assign task
  int64_t next_issue_order_ = 0;
  int64_t bucket_bytes_ = 0;        // LowerOptions::bucket_bytes
  bool step_ends_exchange_ = true;  // no exchange follows the boxing step being lowered
  std::map<BucketKey, Bucket> buckets_;
  int64_t next_tag_ = 0;
  int64_t devices_per_rank_ = 0;                                      // 0: every device on rank 0
  plan::DeviceFold fold_;                                             // LowerOptions::fold
  std::map<std::vector<int64_t>, std::vector<int64_t>> last_images_;  // by placement devices
  std::map<std::vector<int64_t>, std::map<int64_t, int64_t>> parallel_index_;  // device id -> j
  int64_t micro_batches_ = 1;
  parallel::Schedule schedule_ = parallel::Schedule::kOneFOneB;  // LowerOptions::schedule
  std::vector<Rate> rates_;                                      // by op id
  std::vector<Rate> regst_rate_;                                 // by register id
  std::map<int32_t, std::vector<int32_t>> device_stages_;        // device -> its stages, ascending
  int pipeline_ranks_ = 1;                                       // P: stages / stages per device
  int32_t current_stage_ = 0;                                    // of the op being lowered
  int32_t source_stage_ = 0;                                     // of the tensor being boxed
  Rate current_rate_ = Rate::kStep;                              // of the op being lowered
  // The pass NewTask stamps on a task: the op being lowered, whose input boxing and rate
  // changes belong to it, or the task a SEND, RECV or SINK serves.
  plan::Pass current_pass_ = plan::PASS_FORWARD;
  // By tensor: read by a backward op outside a zero-bubble schedule's weight pass (the input
  // pass), whose shared boxing the weight pass must not own (RegstsFor).
  std::vector<bool> read_by_input_pass_;
};

}  // namespace twinflow::compiler::lowering
