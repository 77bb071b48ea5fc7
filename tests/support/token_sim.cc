#include "tests/support/token_sim.h"

#include <algorithm>
#include <string>
#include <vector>

namespace twinflow::testing {

using plan::Plan;
using plan::Regst;
using plan::Task;

TokenSim::TokenSim(const Plan& plan, int64_t steps) : plan_(plan) {
  const int64_t n = plan.tasks_size(), m = plan.regsts_size();
  total_.assign(n, 0);
  acts_.assign(n, 0);
  produced_.assign(m, 0);
  acquired_.assign(m, 0);
  freed_.resize(m);
  for (int64_t r = 0; r < m; ++r) freed_[r].assign(plan.regsts(r).consumers_size(), 0);
  std::vector<int64_t> out_pieces(m, 0);
  for (int64_t t : TopologicalOrder()) {
    const Task& task = plan.tasks(t);
    int64_t base = -1;
    for (int64_t r : task.consumed_regsts()) {
      if (plan.regsts(r).lag() == 0)
        base = base < 0 ? out_pieces[r] : std::min(base, out_pieces[r]);
    }
    base = std::max<int64_t>(base, 0);
    int64_t out = base;
    if (task.kind() == plan::SOURCE)
      out = total_[t] = plan.pieces_per_step() * steps;
    else if (task.kind() == plan::VARIABLE)
      out = total_[t] = steps;
    else if (task.kind() == plan::ACC)
      total_[t] = base, out = base / Count(t);
    else if (task.kind() == plan::REPEAT)
      out = total_[t] = base * Count(t);
    else
      total_[t] = base;
    for (int64_t r : task.produced_regsts()) out_pieces[r] = out;
  }
}

bool TokenSim::Run() {
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t t = 0; t < plan_.tasks_size(); ++t) {
      while (acts_[t] < total_[t] && InputsReady(t, nullptr) && OutputsFree(t, nullptr)) {
        Act(t);
        progress = true;
      }
    }
  }
  for (int64_t t = 0; t < plan_.tasks_size(); ++t) {
    if (acts_[t] < total_[t]) return false;
  }
  return true;
}

std::vector<int64_t> TokenSim::FullOutputs() const {
  std::vector<int64_t> full;
  for (int64_t t = 0; t < plan_.tasks_size(); ++t) {
    if (acts_[t] < total_[t] && InputsReady(t, nullptr)) OutputsFree(t, &full);
  }
  return full;
}

std::string TokenSim::Report() const {
  std::string report;
  for (int64_t t = 0; t < plan_.tasks_size() && report.size() < 2000; ++t) {
    if (acts_[t] >= total_[t]) continue;
    std::vector<int64_t> inputs, outputs;
    InputsReady(t, &inputs);
    OutputsFree(t, &outputs);
    report += "task " + std::to_string(t) + " '" + plan_.tasks(t).name() + "' at act " +
              std::to_string(acts_[t]) + " of " + std::to_string(total_[t]);
    for (int64_t r : inputs) report += ", waits for regst " + std::to_string(r);
    for (int64_t r : outputs) report += ", regst " + std::to_string(r) + " full";
    report += "; ";
  }
  return report;
}

int64_t TokenSim::Count(int64_t t) const {
  const Task& task = plan_.tasks(t);
  return std::max<int64_t>(1, task.kind() == plan::ACC      ? task.acc_count()
                              : task.kind() == plan::REPEAT ? task.repeat_count()
                                                            : 1);
}

std::vector<int64_t> TokenSim::TopologicalOrder() const {
  const int64_t n = plan_.tasks_size();
  std::vector<int64_t> indegree(n, 0), order;
  for (const Regst& regst : plan_.regsts()) {
    if (regst.lag() == 0) {
      for (int64_t c : regst.consumers()) ++indegree[c];
    }
  }
  for (int64_t t = 0; t < n; ++t) {
    if (indegree[t] == 0) order.push_back(t);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    for (int64_t r : plan_.tasks(order[i]).produced_regsts()) {
      if (plan_.regsts(r).lag() != 0) continue;
      for (int64_t c : plan_.regsts(r).consumers()) {
        if (--indegree[c] == 0) order.push_back(c);
      }
    }
  }
  return order;
}

int64_t TokenSim::ConsumerIndex(int64_t r, int64_t t) const {
  const auto& consumers = plan_.regsts(r).consumers();
  return std::lower_bound(consumers.begin(), consumers.end(), t) - consumers.begin();
}

int64_t TokenSim::InUse(int64_t r) const {
  int64_t returned = produced_[r];
  const auto& consumers = plan_.regsts(r).consumers();
  for (int i = 0; i < consumers.size(); ++i) {
    if (acts_[consumers[i]] < total_[consumers[i]]) returned = std::min(returned, freed_[r][i]);
  }
  return acquired_[r] - returned;
}

int64_t TokenSim::Needed(int64_t t, int64_t r, int64_t p) const {
  const int64_t q = plan_.tasks(t).kind() == plan::REPEAT ? p / Count(t) : p;
  return q - plan_.regsts(r).lag();
}

bool TokenSim::InputsReady(int64_t t, std::vector<int64_t>* missing) const {
  bool ready = true;
  for (int64_t r : plan_.tasks(t).consumed_regsts()) {
    const int64_t q = Needed(t, r, acts_[t]);
    if (q >= 0 && produced_[r] <= q) {
      ready = false;
      if (missing) missing->push_back(r);
    }
  }
  return ready;
}

bool TokenSim::NeedsSlot(int64_t t) const {
  return plan_.tasks(t).kind() != plan::ACC || acts_[t] % Count(t) == 0;
}

bool TokenSim::OutputsFree(int64_t t, std::vector<int64_t>* full) const {
  bool free = true;
  if (!NeedsSlot(t)) return true;
  for (int64_t r : plan_.tasks(t).produced_regsts()) {
    if (InUse(r) >= plan_.regsts(r).slots()) {
      free = false;
      if (full) full->push_back(r);
    }
  }
  return free;
}

void TokenSim::Act(int64_t t) {
  const Task& task = plan_.tasks(t);
  const int64_t p = acts_[t], k = Count(t);
  const bool announce = task.kind() != plan::ACC || p % k == k - 1;
  for (int64_t r : task.produced_regsts()) {
    if (NeedsSlot(t)) ++acquired_[r];
    if (announce) ++produced_[r];
  }
  for (int64_t r : task.consumed_regsts()) {
    const int64_t used =
        (task.kind() == plan::REPEAT ? (p + 1) / k : p + 1) - plan_.regsts(r).lag();
    int64_t& freed = freed_[r][ConsumerIndex(r, t)];
    freed = std::max(freed, used);
  }
  ++acts_[t];
}

std::string SimulateTokens(const plan::Plan& plan, int64_t steps) {
  TokenSim sim(plan, steps);
  return sim.Run() ? "" : sim.Report();
}

}  // namespace twinflow::testing
