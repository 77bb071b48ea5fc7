#include "engine/plan/plan_rates.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <string>

#include "engine/core/error.h"

namespace twinflow::plan {

std::vector<int64_t> PeerSends(const Plan& plan) {
  std::map<int64_t, int64_t> send_of_tag;
  for (const Task& t : plan.tasks()) {
    if (t.kind() == SEND) send_of_tag[t.tag()] = t.id();
  }
  std::vector<int64_t> peer(plan.tasks_size(), -1);
  for (const Task& t : plan.tasks()) {
    if (t.kind() != RECV) continue;
    const auto it = send_of_tag.find(t.tag());
    if (it != send_of_tag.end()) peer[t.id()] = it->second;
  }
  return peer;
}

std::vector<std::vector<int64_t>> Successors(const Plan& plan) {
  std::vector<std::vector<int64_t>> next(plan.tasks_size());
  for (const Regst& regst : plan.regsts()) {
    if (!LinksOnePiece(regst)) continue;
    for (int64_t c : regst.consumers()) next[regst.producer()].push_back(c);
  }
  const std::vector<int64_t> peer = PeerSends(plan);
  for (int64_t t = 0; t < plan.tasks_size(); ++t) {
    if (peer[t] >= 0) next[peer[t]].push_back(t);
  }
  return next;
}

std::vector<int64_t> TopologicalTasks(const Plan& plan) {
  const int n = plan.tasks_size();
  const std::vector<std::vector<int64_t>> next = Successors(plan);
  std::vector<int> waiting(n, 0);
  for (const auto& list : next) {
    for (int64_t c : list) ++waiting[c];
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
    for (int64_t c : next[task]) {
      if (--waiting[c] == 0) ready.push(c);
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

std::vector<int64_t> ActsPerStep(const Plan& plan) {
  const std::vector<int64_t> peer = PeerSends(plan);
  std::vector<int64_t> acts(plan.tasks_size(), 1);
  const int64_t pieces = std::max<int64_t>(plan.pieces_per_step(), 1);
  for (int64_t id : TopologicalTasks(plan)) {
    const Task& t = plan.tasks(static_cast<int>(id));
    // The rate of its first data input (a control register only if it has no data input).
    int64_t in = -1;
    for (int64_t r : t.consumed_regsts()) {
      const Regst& regst = plan.regsts(static_cast<int>(r));
      if (!LinksOnePiece(regst)) continue;
      if (regst.tensor().dtype() != plan::DTYPE_UNSPECIFIED) {
        in = acts[regst.producer()];
        break;
      }
      if (in < 0) in = acts[regst.producer()];
    }
    if (peer[id] >= 0) in = acts[peer[id]];
    if (in < 0) in = 1;
    switch (t.kind()) {
      case SOURCE:
        acts[id] = pieces;
        break;
      case VARIABLE:
        acts[id] = 1;
        break;
      case ACC:
        acts[id] = std::max<int64_t>(1, in / std::max<int64_t>(t.acc_count(), 1));
        break;
      case REPEAT:
        acts[id] = in * std::max<int64_t>(t.repeat_count(), 1);
        break;
      default:
        acts[id] = in;
    }
  }
  return acts;
}

}  // namespace twinflow::plan
