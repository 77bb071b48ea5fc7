#include "engine/compiler/task_chains.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "engine/core/error.h"
#include "engine/plan/plan_fold.h"
#include "engine/plan/plan_rates.h"

namespace twinflow::compiler {
namespace {

// An ASSIGN is chained too, after the update whose value it writes: that value then lives
// from the update to the ASSIGN, not for the whole step.
bool IsChained(plan::TaskKind kind) {
  return kind == plan::COMPUTE || kind == plan::COPY || kind == plan::COLLECTIVE ||
         kind == plan::ASSIGN;
}

// Tasks every SINK depends on within a piece.
std::vector<bool> FeedsSinks(const plan::Plan& plan, const std::vector<int64_t>& order,
                             const std::vector<std::vector<int64_t>>& next) {
  std::vector<bool> marked(plan.tasks_size(), false);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    marked[*it] = plan.tasks(static_cast<int>(*it)).kind() == plan::SINK;
    for (int64_t c : next[*it]) marked[*it] = marked[*it] || marked[c];
  }
  return marked;
}

// A chain's device, stage, forward and weight flags, acts per step and whether it feeds a REPEAT.
using ChainKey = std::tuple<int32_t, int32_t, bool, bool, int64_t, bool>;

bool HasDirectEdge(const plan::Plan& plan, int64_t from, int64_t to) {
  for (int64_t r : plan.tasks(static_cast<int>(from)).produced_regsts()) {
    const plan::Regst& regst = plan.regsts(static_cast<int>(r));
    if (!plan::LinksOnePiece(regst)) continue;
    if (std::binary_search(regst.consumers().begin(), regst.consumers().end(), to)) return true;
  }
  return false;
}

// The collectives among `all` (a chain's tasks; `members`, the same as a set) whose outputs are all
// read inside the chain: the candidates to float.
std::set<int64_t> ReadInside(const plan::Plan& plan, const std::vector<int64_t>& all,
                             const std::set<int64_t>& members) {
  std::set<int64_t> floats;
  for (int64_t id : all) {
    const plan::Task& t = plan.tasks(static_cast<int>(id));
    if (t.kind() != plan::COLLECTIVE) continue;
    bool read = false;
    bool inside = true;
    for (int64_t r : t.produced_regsts()) {
      const plan::Regst& regst = plan.regsts(static_cast<int>(r));
      for (int64_t c : regst.consumers()) {
        read = true;
        // A read in another copy of a folded Plan is another device's (plan_fold.h).
        inside = inside && regst.lag() == 0 && members.count(c) > 0 &&
                 !plan::ReadsOtherCopies(plan.tasks(static_cast<int>(c)), regst.id(), false);
      }
    }
    if (read && inside) floats.insert(id);
  }
  return floats;
}

// Splits `all` (a chain's tasks in order) into serial tasks and the floating ones of `floats`,
// with their gaps; returns the floating ones that must be serial after all (see below).
std::set<int64_t> Place(const plan::Plan& plan, const std::vector<int64_t>& all,
                        const std::set<int64_t>& members, const std::set<int64_t>& floats,
                        TaskChain& chain) {
  chain.tasks.clear();
  chain.floating.clear();
  std::map<int64_t, int64_t> position;  // serial tasks
  std::map<int64_t, FloatingTask> floating;
  for (int64_t id : all) {
    if (floats.count(id) == 0) {
      position[id] = static_cast<int64_t>(chain.tasks.size());
      chain.tasks.push_back(id);
      continue;
    }
    FloatingTask f{id, -1, 0};
    for (int64_t r : plan.tasks(static_cast<int>(id)).consumed_regsts()) {
      const plan::Regst& regst = plan.regsts(static_cast<int>(r));
      if (!plan::LinksOnePiece(regst) || members.count(regst.producer()) == 0) continue;
      const auto p = position.find(regst.producer());
      f.after =
          std::max(f.after, p != position.end() ? p->second : floating.at(regst.producer()).after);
    }
    floating[id] = f;
  }
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const auto f = floating.find(*it);
    if (f == floating.end()) continue;
    f->second.before = static_cast<int64_t>(chain.tasks.size());
    for (int64_t r : plan.tasks(static_cast<int>(*it)).produced_regsts()) {
      for (int64_t c : plan.regsts(static_cast<int>(r)).consumers()) {
        const auto p = position.find(c);
        f->second.before =
            std::min(f->second.before, p != position.end() ? p->second : floating.at(c).before);
      }
    }
  }
  // Serial after all: one that reads nothing of the chain (nothing would hold its next piece
  // back until the chain's next piece began, so its registers would have no fixed span), and
  // one with nothing to overlap (its first reader comes right after its producer): floating
  // it would only have its transfer compete for the core with work that cannot start sooner.
  std::set<int64_t> serial;
  for (int64_t id : all) {
    const auto f = floating.find(id);
    if (f == floating.end()) continue;
    if (f->second.after < 0 || f->second.before <= f->second.after + 1) serial.insert(id);
    chain.floating.push_back(f->second);
  }
  return serial;
}

// Moves the collectives of `chain` that can float (task_chains.h) out of its serial tasks.
void SplitFloating(const plan::Plan& plan, TaskChain& chain) {
  if (plan.serial_collectives()) return;
  const std::vector<int64_t> all = std::move(chain.tasks);
  const std::set<int64_t> members(all.begin(), all.end());
  std::set<int64_t> floats = ReadInside(plan, all, members);
  // Making one serial moves the gaps of those that read it: place again until none changes.
  while (true) {
    const std::set<int64_t> serial = Place(plan, all, members, floats, chain);
    if (serial.empty()) return;
    for (int64_t id : serial) floats.erase(id);
  }
}

// Puts each ACC right after the chained task whose per-micro-batch value it accumulates, in
// that task's chain: the value then lives over a span of the chain (two positions) and shares
// bytes, as Megatron adds each micro-batch's weight gradient into its main_grad buffer and
// frees it; outside the chain it would hold bytes of its own for the whole step beside the
// accumulator. The ACC's control outputs carry a piece every act (runtime/actor.h), so the
// chain's order edges work through it. The accumulator itself is read at step rate, outside.
void JoinAccumulations(const plan::Plan& plan, const std::vector<int64_t>& order,
                       std::map<ChainKey, TaskChain>& chains) {
  std::map<int64_t, TaskChain*> chain_of;
  for (auto& [key, chain] : chains) {
    for (int64_t id : chain.tasks) chain_of[id] = &chain;
  }
  std::map<int64_t, std::vector<int64_t>> after;  // chained task -> the ACCs that follow it
  for (int64_t id : order) {
    const plan::Task& t = plan.tasks(static_cast<int>(id));
    if (t.kind() != plan::ACC) continue;
    for (int64_t r : t.consumed_regsts()) {
      const plan::Regst& regst = plan.regsts(static_cast<int>(r));
      if (regst.bytes_per_slot() == 0 || !plan::LinksOnePiece(regst)) continue;
      const auto found = chain_of.find(regst.producer());
      if (found != chain_of.end() && found->second->device == t.device())
        after[regst.producer()].push_back(id);
    }
  }
  if (after.empty()) return;
  for (auto& [key, chain] : chains) {
    std::vector<int64_t> tasks;
    for (int64_t id : chain.tasks) {
      tasks.push_back(id);
      const auto found = after.find(id);
      if (found != after.end())
        tasks.insert(tasks.end(), found->second.begin(), found->second.end());
    }
    chain.tasks = std::move(tasks);
  }
}

}  // namespace

std::vector<TaskChain> FindTaskChains(const plan::Plan& plan) {
  const std::vector<int64_t> acts = plan::ActsPerStep(plan);
  const std::vector<int64_t> order = plan::TopologicalTasks(plan);
  const std::vector<std::vector<int64_t>> next = plan::Successors(plan);
  const std::vector<bool> forward = FeedsSinks(plan, order, next);
  // Reachability from an ACC and to a REPEAT within a piece. A step value that feeds the
  // step's own micro-batches (through a REPEAT) is needed at the start of the step; one that
  // depends on an ACC exists only at its end. Chains never join the two, and a Plan with a
  // value that is both (legal, if slots allow) gets no chains at all: the argument above needs
  // every step value to be early or late.
  std::vector<bool> late(plan.tasks_size(), false);  // an ACC or after one
  for (int64_t id : order) {
    if (plan.tasks(static_cast<int>(id)).kind() == plan::ACC) late[id] = true;
    for (int64_t c : next[id]) late[c] = late[c] || late[id];
  }
  std::vector<bool> feeds_repeat(plan.tasks_size(), false);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    for (int64_t c : next[*it]) {
      if (feeds_repeat[c] || plan.tasks(static_cast<int>(c)).kind() == plan::REPEAT) {
        feeds_repeat[*it] = true;
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
  // The forward pass is a chain of its own so that a pipeline can run micro-batch p + 1's
  // forward before p's backward. With one micro-batch per step there is nothing to interleave:
  // the device's forward and backward are one chain, and what the backward reads of the
  // forward (recomputation's checkpoints, the logits) lives over a span of it too.
  const bool one_piece = plan.pieces_per_step() <= 1;
  // A zero-bubble schedule's weight pass is a chain of its own too, run later than the rest of
  // the backward (compiler/pipeline_schedule.h).
  std::map<ChainKey, TaskChain> chains;
  for (int64_t id : order) {
    const plan::Task& t = plan.tasks(static_cast<int>(id));
    if (!IsChained(t.kind())) continue;
    const bool own_chain = forward[id] && !one_piece;
    const bool weight = t.pass() == plan::PASS_WEIGHT && !one_piece;
    TaskChain& chain =
        chains[{t.device(), t.stage(), own_chain, weight, acts[id], feeds_repeat[id]}];
    chain.device = t.device();
    chain.stage = t.stage();
    chain.forward = own_chain;
    chain.weight = weight;
    chain.acts_per_step = acts[id];
    chain.tasks.push_back(id);
  }
  JoinAccumulations(plan, order, chains);
  std::vector<TaskChain> result;
  for (auto& [key, chain] : chains) {
    SplitFloating(plan, chain);
    if (chain.tasks.size() > 1) result.push_back(std::move(chain));
  }
  return result;
}

int64_t AddControlRegst(plan::Plan& plan, int64_t from, int64_t to, int32_t lag) {
  plan::Regst* regst = plan.add_regsts();
  regst->set_id(plan.regsts_size() - 1);
  regst->set_producer(from);
  regst->add_consumers(to);
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
