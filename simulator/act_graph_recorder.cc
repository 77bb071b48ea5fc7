#include "simulator/act_graph_recorder.h"

#include <algorithm>

namespace twinflow::sim {

ActGraphRecorder::ActGraphRecorder(const plan::Plan& plan)
    : plan_(plan),
      task_acts_(static_cast<size_t>(plan.tasks_size())),
      order_inputs_(static_cast<size_t>(plan.tasks_size())) {
  for (const plan::Regst& r : plan.regsts()) {
    if (r.order_counts_size() == 0) continue;
    for (int64_t consumer : r.consumers()) {
      order_inputs_[static_cast<size_t>(consumer)].push_back({r.producer(), &r.order_counts()});
    }
  }
}

void ActGraphRecorder::Launched(const runtime::Launch& launch) {
  plan::ActRecord act;
  act.task = launch.task;
  std::vector<int64_t>& mine = task_acts_[static_cast<size_t>(launch.task)];
  for (const runtime::SlotRef& in : launch.inputs) {
    const auto it = announced_.find({in.regst, in.piece});
    if (it != announced_.end()) act.data_deps.push_back(it->second);
  }
  if (!mine.empty()) act.ctrl_deps.push_back(mine.back());
  // Act k of a step of `size` acts waits for counts[k % size] of the producer's acts that step.
  const int64_t k = static_cast<int64_t>(mine.size());
  for (const OrderInput& order : order_inputs_[static_cast<size_t>(launch.task)]) {
    const int64_t size = order.counts->size();
    const int64_t needs = order.counts->Get(static_cast<int>(k % size));
    const std::vector<int64_t>& theirs = task_acts_[static_cast<size_t>(order.producer)];
    const int64_t n = k / size * size + needs - 1;
    if (needs > 0 && n < static_cast<int64_t>(theirs.size())) {
      act.ctrl_deps.push_back(theirs[static_cast<size_t>(n)]);
    }
  }
  for (auto* deps : {&act.data_deps, &act.ctrl_deps}) {
    std::sort(deps->begin(), deps->end());
    deps->erase(std::unique(deps->begin(), deps->end()), deps->end());
  }
  mine.push_back(static_cast<int64_t>(acts_.size()));
  acts_.push_back(std::move(act));
}

void ActGraphRecorder::Finished(int64_t task, const runtime::Outbox& out) {
  const std::vector<int64_t>& mine = task_acts_[static_cast<size_t>(task)];
  if (mine.empty()) return;
  for (const runtime::Envelope& e : out.messages) {
    if (const auto* ready = std::get_if<runtime::RegstReady>(&e.message)) {
      announced_[{ready->regst, ready->piece}] = mine.back();
    }
  }
}

void ActGraphRecorder::Timed(int64_t task, int64_t start_ns, int64_t end_ns) {
  const std::vector<int64_t>& mine = task_acts_[static_cast<size_t>(task)];
  if (mine.empty()) return;
  plan::ActRecord& act = acts_[static_cast<size_t>(mine.back())];
  act.start_ns = start_ns;
  act.end_ns = end_ns;
}

}  // namespace twinflow::sim
