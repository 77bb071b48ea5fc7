#include "engine/compiler/task_chains.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <string>
#include <tuple>

#include "engine/core/error.h"

namespace twinflow::compiler {
namespace {

bool IsChained(plan::TaskKind kind) {
  return kind == plan::COMPUTE || kind == plan::COPY || kind == plan::COLLECTIVE;
}

// Tasks every SINK depends on through registers of lag 0.
std::vector<bool> FeedsSinks(const plan::Plan& plan) {
  std::vector<bool> marked(plan.tasks_size(), false);
  std::vector<int64_t> stack;
  for (const plan::Task& t : plan.tasks()) {
    if (t.kind() == plan::SINK) stack.push_back(t.id());
  }
  while (!stack.empty()) {
    const int64_t task = stack.back();
    stack.pop_back();
    if (marked[task]) continue;
    marked[task] = true;
    for (int64_t r : plan.tasks(static_cast<int>(task)).consumed_regsts()) {
      const plan::Regst& regst = plan.regsts(static_cast<int>(r));
      if (regst.lag() == 0) stack.push_back(regst.producer());
    }
  }
  return marked;
}

bool HasDirectEdge(const plan::Plan& plan, int64_t from, int64_t to) {
  for (int64_t r : plan.tasks(static_cast<int>(from)).produced_regsts()) {
    const plan::Regst& regst = plan.regsts(static_cast<int>(r));
    if (regst.lag() != 0) continue;
    if (std::binary_search(regst.consumers().begin(), regst.consumers().end(), to)) return true;
  }
  return false;
}

}  // namespace

std::vector<int64_t> TopologicalTasks(const plan::Plan& plan) {
  const int n = plan.tasks_size();
  std::vector<int> waiting(n, 0);
  for (const plan::Task& t : plan.tasks()) {
    for (int64_t r : t.consumed_regsts()) {
      if (plan.regsts(static_cast<int>(r)).lag() == 0) ++waiting[t.id()];
    }
  }
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> ready;
  for (int t = 0; t < n; ++t) {
    if (waiting[t] == 0) ready.push(t);
  }
  std::vector<int64_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int64_t task = ready.top();
    ready.pop();
    order.push_back(task);
    for (int64_t r : plan.tasks(static_cast<int>(task)).produced_regsts()) {
      const plan::Regst& regst = plan.regsts(static_cast<int>(r));
      if (regst.lag() != 0) continue;
      for (int64_t c : regst.consumers()) {
        if (--waiting[c] == 0) ready.push(c);
      }
    }
  }
  if (static_cast<int>(order.size()) != n) {
    for (int t = 0; t < n; ++t) {
      if (waiting[t] > 0) {
        throw PlanError("task " + plan.tasks(t).name() + " is on a cycle of registers of lag 0");
      }
    }
  }
  return order;
}

std::vector<int64_t> ActsPerStep(const plan::Plan& plan) {
  std::vector<int64_t> acts(plan.tasks_size(), 1);
  const int64_t pieces = std::max<int64_t>(plan.pieces_per_step(), 1);
  for (int64_t id : TopologicalTasks(plan)) {
    const plan::Task& t = plan.tasks(static_cast<int>(id));
    // The rate of its first data input (a control register only if it has no data input).
    int64_t in = -1;
    for (int64_t r : t.consumed_regsts()) {
      const plan::Regst& regst = plan.regsts(static_cast<int>(r));
      if (regst.lag() != 0) continue;
      if (!regst.tensor().dtype().empty()) {
        in = acts[regst.producer()];
        break;
      }
      if (in < 0) in = acts[regst.producer()];
    }
    if (in < 0) in = 1;
    switch (t.kind()) {
      case plan::SOURCE: acts[id] = pieces; break;
      case plan::VARIABLE: acts[id] = 1; break;
      case plan::ACC: acts[id] = std::max<int64_t>(1, in / std::max<int64_t>(t.acc_count(), 1)); break;
      case plan::REPEAT: acts[id] = in * std::max<int64_t>(t.repeat_count(), 1); break;
      default: acts[id] = in;
    }
  }
  return acts;
}

std::vector<TaskChain> FindTaskChains(const plan::Plan& plan) {
  const std::vector<int64_t> acts = ActsPerStep(plan);
  const std::vector<bool> forward = FeedsSinks(plan);
  const std::vector<int64_t> order = TopologicalTasks(plan);
  // Lag-0 reachability from an ACC and to a REPEAT. A step value that feeds the step's own
  // micro-batches (through a REPEAT) is needed at the start of the step; one that depends on
  // an ACC exists only at its end. Chains never join the two, and a Plan with a value that is
  // both (legal, if slots allow) gets no chains at all: the argument above needs every step
  // value to be early or late.
  std::vector<bool> late(plan.tasks_size(), false);  // an ACC or after one
  std::vector<bool> feeds_repeat(plan.tasks_size(), false);
  for (int64_t id : order) {
    late[id] = plan.tasks(static_cast<int>(id)).kind() == plan::ACC;
    for (int64_t r : plan.tasks(static_cast<int>(id)).consumed_regsts()) {
      const plan::Regst& regst = plan.regsts(static_cast<int>(r));
      if (regst.lag() == 0 && late[regst.producer()]) late[id] = true;
    }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const plan::Task& t = plan.tasks(static_cast<int>(*it));
    for (int64_t r : t.produced_regsts()) {
      const plan::Regst& regst = plan.regsts(static_cast<int>(r));
      if (regst.lag() != 0) continue;
      for (int64_t c : regst.consumers()) {
        if (feeds_repeat[c] || plan.tasks(static_cast<int>(c)).kind() == plan::REPEAT) {
          feeds_repeat[*it] = true;
        }
      }
    }
    if (feeds_repeat[*it] && late[*it]) return {};
  }
  // A lagged register whose producer may run ahead of its consumer (slots > lag), or exactly
  // level with it when the consumer comes first, keeps every edge forward; otherwise its
  // producer waits for a later act of its consumer, and there are no such times either.
  std::vector<size_t> position(plan.tasks_size());
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  for (const plan::Regst& regst : plan.regsts()) {
    if (regst.lag() == 0 || regst.slots() > regst.lag()) continue;
    if (regst.slots() < regst.lag()) return {};
    for (int64_t c : regst.consumers()) {
      if (position[c] > position[regst.producer()]) return {};
    }
  }
  std::map<std::tuple<int32_t, bool, int64_t, bool>, TaskChain> chains;
  for (int64_t id : order) {
    const plan::Task& t = plan.tasks(static_cast<int>(id));
    if (!IsChained(t.kind())) continue;
    TaskChain& chain = chains[{t.device(), forward[id], acts[id], feeds_repeat[id]}];
    chain.device = t.device();
    chain.forward = forward[id];
    chain.acts_per_step = acts[id];
    chain.tasks.push_back(id);
  }
  std::vector<TaskChain> result;
  for (auto& [key, chain] : chains) {
    if (chain.tasks.size() > 1) result.push_back(std::move(chain));
  }
  return result;
}

int64_t AddControlRegst(plan::Plan& plan, int64_t from, int64_t to, int32_t lag) {
  plan::Regst* regst = plan.add_regsts();
  regst->set_id(plan.regsts_size() - 1);
  regst->set_producer(from);
  regst->add_consumers(to);
  regst->set_slots(std::max(1, lag));
  regst->set_lag(lag);
  plan.mutable_tasks(static_cast<int>(from))->add_produced_regsts(regst->id());
  plan.mutable_tasks(static_cast<int>(to))->add_consumed_regsts(regst->id());
  return regst->id();
}

void OrderChains(plan::Plan& plan, const std::vector<TaskChain>& chains) {
  for (const TaskChain& chain : chains) {
    for (size_t i = 1; i < chain.tasks.size(); ++i) {
      if (!HasDirectEdge(plan, chain.tasks[i - 1], chain.tasks[i])) {
        AddControlRegst(plan, chain.tasks[i - 1], chain.tasks[i], 0);
      }
    }
    AddControlRegst(plan, chain.tasks.back(), chain.tasks.front(), 1);
  }
}

}  // namespace twinflow::compiler
