// The registers an op's input reads: the producer's, accumulated (ACC), boxed and repeated
// (REPEAT) as the consumer's layout and rate ask, each value shared by every reader of it
// (compiler.md, "Inputs: the producer's registers, boxed and rate-changed").
#include <algorithm>

#include "engine/compiler/lower_internal.h"
#include "engine/core/error.h"
#include "engine/sbp/slicing.h"

namespace twinflow::compiler {
namespace lowering {
std::vector<int64_t> Lowerer::RegstsFor(TensorId tensor, const Layout& layout, Rate rate,
                                        graph::OpId consumer) {
  const graph::TensorNode& node = graph_.tensor(tensor);
  const Rate produced_rate = rates_[node.producer];
  const bool accumulate =
      micro_batches_ > 1 && produced_rate == Rate::kMicroBatch && rate == Rate::kStep;
  const bool repeat =
      micro_batches_ > 1 && produced_rate == Rate::kStep && rate == Rate::kMicroBatch;
  // Forward and backward passes read a repeated step value at their own pace: a REPEAT each.
  const bool backward_repeat = repeat && graph_.IsBackward(consumer);
  const std::string key = BoxedKey(tensor, layout, rate) + (backward_repeat ? "|backward" : "");
  const auto it = boxed_.find(key);
  if (it != boxed_.end()) return it->second;
  // What is made here every consumer reading the tensor so shares. A weight-pass op reaching
  // it first must not put in the weight pass what the input pass also waits for: the input
  // pass would wait for the weight pass, which the schedule runs after it (a deadlock).
  const plan::Pass op_pass = current_pass_;
  if (op_pass == plan::PASS_WEIGHT && read_by_input_pass_[tensor]) {
    current_pass_ = plan::PASS_BACKWARD;
  }
  const Layout produced = ProducedLayout(graph_, assignment_, tensor);
  std::vector<int64_t> current = produced_.at(tensor);
  current_rate_ = produced_rate;
  source_stage_ = graph_.op(node.producer).stage;
  if (accumulate) {
    current_rate_ = Rate::kStep;  // the ACC's output: once per step
    current = Shared(BoxedKey(tensor, produced, Rate::kStep),
                     [&] { return RateChange(node, produced, current, plan::ACC); });
  }
  if (!(produced == layout)) {
    const sbp::BoxingPlan& boxing = PlannedBoxing(tensor, consumer, layout);
    for (size_t s = 0; s < boxing.steps.size(); ++s) {
      // A bucket joins only an all-reduce that no exchange between devices follows: a later
      // send/recv mixing the members of several groups would make each group's bucket wait
      // for the others' (a cycle through the buckets' shared output registers).
      step_ends_exchange_ = std::all_of(boxing.steps.begin() + static_cast<std::ptrdiff_t>(s) + 1,
                                        boxing.steps.end(), [](const sbp::BoxingStep& later) {
                                          return later.kind == sbp::BoxingStepKind::kLocalSlice;
                                        });
      current = Shared(BoxedKey(tensor, boxing.steps[s].to, current_rate_),
                       [&] { return LowerStep(node, boxing.steps[s], current, s); });
    }
  }
  if (repeat) {
    if (backward_repeat) current = Snapshot(node, layout, current);
    current_rate_ = Rate::kMicroBatch;
    current = RateChange(node, layout, current, plan::REPEAT, backward_repeat);
  }
  current_pass_ = op_pass;
  return boxed_[key] = current;
}

// A tensor in one layout at one rate is one value, however it was reached: every consumer
// reading it so (and every boxing passing through it) shares its registers, so that two
// consumers of a gradient wanting different layouts share its ACC and the boxing steps their
// paths have in common (the global norm's and the update's reduce-scatter, say).
std::string Lowerer::BoxedKey(TensorId tensor, const Layout& layout, Rate rate) {
  return std::to_string(tensor) + "|" + layout.ToString() + "|" +
         std::to_string(static_cast<int>(rate));
}

std::vector<int64_t> Lowerer::Shared(const std::string& key,
                                     const std::function<std::vector<int64_t>()>& make) {
  const auto it = boxed_.find(key);
  if (it != boxed_.end()) return it->second;
  std::vector<int64_t> made = make();
  return boxed_[key] = made;
}

const sbp::BoxingPlan& Lowerer::PlannedBoxing(TensorId tensor, graph::OpId consumer,
                                              const Layout& layout) const {
  const std::vector<BoxingEdge>& edges = assignment_.boxings;  // by consumer, then input
  auto it = std::lower_bound(edges.begin(), edges.end(), consumer,
                             [](const BoxingEdge& e, graph::OpId op) { return e.consumer < op; });
  for (; it != edges.end() && it->consumer == consumer; ++it) {
    if (it->tensor == tensor && it->plan->dst == layout) return *it->plan;
  }
  throw PlanError("the SBP assignment plans no boxing of '" + graph_.tensor(tensor).name + "' to " +
                  layout.ToString() + " for op '" + graph_.op(consumer).name + "'");
}

std::vector<int64_t> Lowerer::RateChange(const graph::TensorNode& node, const Layout& layout,
                                         const std::vector<int64_t>& current, plan::TaskKind kind,
                                         bool for_backward) {
  std::vector<int64_t> next;
  const std::string suffix = kind == plan::ACC ? "/acc@"
                             : for_backward    ? "/repeat_backward@"
                                               : "/repeat@";
  for (int64_t d = 0; d < layout.placement.size(); ++d) {
    if (current[d] < 0) {  // folded: not in copy 0
      next.push_back(-1);
      continue;
    }
    plan::Task& task =
        NewTask(kind, DeviceOf(layout.placement.device(d)),
                node.name + suffix + std::to_string(layout.placement.device(d).index));
    if (kind == plan::ACC) task.set_acc_count(micro_batches_);
    if (kind == plan::REPEAT) task.set_repeat_count(micro_batches_);
    Consume(task, current[d]);
    next.push_back(NewRegst(task, sbp::PhysicalShape(node.meta.shape, layout, d), node.meta.dtype));
  }
  return next;
}

std::vector<int64_t> Lowerer::Snapshot(const graph::TensorNode& node, const Layout& layout,
                                       const std::vector<int64_t>& current) {
  bool variable = true;
  for (int64_t r : current)
    variable &= r < 0 || plan_.tasks(plan_.regsts(r).producer()).kind() == plan::VARIABLE;
  if (!variable) return current;
  std::vector<int64_t> next;
  for (int64_t d = 0; d < layout.placement.size(); ++d) {
    if (current[d] < 0) {  // folded: not in copy 0
      next.push_back(-1);
      continue;
    }
    plan::Task& task =
        NewTask(plan::COPY, DeviceOf(layout.placement.device(d)),
                node.name + "/snapshot@" + std::to_string(layout.placement.device(d).index));
    Consume(task, current[d]);
    const Region region = sbp::PhysicalRegion(node.meta.shape, layout, d);
    AddTransfer(task, current[d], region, region, region, node.meta.dtype);
    next.push_back(NewRegst(task, region.shape(), node.meta.dtype));
  }
  return next;
}
}  // namespace lowering
}  // namespace twinflow::compiler
