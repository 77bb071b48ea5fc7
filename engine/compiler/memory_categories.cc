#include "engine/compiler/memory_categories.h"

#include "engine/plan/plan_rates.h"

namespace twinflow::compiler {
namespace {

// Not decided yet (never returned).
constexpr auto kUnset = static_cast<MemoryCategory>(-1);

bool MovesData(plan::TaskKind kind) {
  return kind == plan::COPY || kind == plan::COLLECTIVE || kind == plan::SEND ||
         kind == plan::RECV || kind == plan::ACC;
}

// Tasks a SINK depends on (lag-0 edges): the forward pass of what the host fetches.
std::vector<bool> FeedsSinks(const plan::Plan& plan) {
  const std::vector<std::vector<int64_t>> next = plan::Successors(plan);
  const std::vector<int64_t> order = plan::TopologicalTasks(plan);
  std::vector<bool> feeds(plan.tasks_size(), false);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    feeds[*it] = plan.tasks(static_cast<int>(*it)).kind() == plan::SINK;
    for (int64_t c : next[*it]) feeds[*it] = feeds[*it] || feeds[c];
  }
  return feeds;
}

// Marks `regst` a gradient, and what the data movement that made it read.
void MarkGradient(const plan::Plan& plan, int64_t regst, std::vector<MemoryCategory>& category) {
  std::vector<int64_t> pending{regst};
  while (!pending.empty()) {
    const int64_t r = pending.back();
    pending.pop_back();
    if (category[r] != kUnset) continue;
    category[r] = MemoryCategory::kGradients;
    const plan::Task& producer =
        plan.tasks(static_cast<int>(plan.regsts(static_cast<int>(r)).producer()));
    if (!MovesData(producer.kind())) continue;
    for (int64_t in : producer.consumed_regsts()) {
      if (plan.regsts(static_cast<int>(in)).bytes_per_slot() > 0) pending.push_back(in);
    }
  }
}

}  // namespace

const char* MemoryCategoryName(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kWeights:
      return "weights";
    case MemoryCategory::kGradients:
      return "gradients";
    case MemoryCategory::kOptimizerState:
      return "optimizer state";
    case MemoryCategory::kActivations:
      return "activations";
    case MemoryCategory::kCommunication:
      return "communication";
  }
  return "?";
}

std::vector<MemoryCategory> RegstCategories(const plan::Plan& plan) {
  std::vector<MemoryCategory> category(plan.regsts_size(), kUnset);
  const std::vector<bool> forward = FeedsSinks(plan);
  const auto producer = [&](int64_t r) -> const plan::Task& {
    return plan.tasks(static_cast<int>(plan.regsts(static_cast<int>(r)).producer()));
  };
  for (const plan::Regst& r : plan.regsts()) {
    const plan::Task& t = producer(r.id());
    if (t.kind() != plan::VARIABLE) continue;
    category[r.id()] = forward[t.id()] ? MemoryCategory::kWeights : MemoryCategory::kOptimizerState;
  }
  // An ASSIGN reads the variable first, then the value it writes.
  std::vector<int64_t> updates;  // tasks computing a weight's next value
  for (const plan::Task& t : plan.tasks()) {
    if (t.kind() != plan::ASSIGN || t.consumed_regsts_size() < 2) continue;
    const MemoryCategory target = category[t.consumed_regsts(0)];
    const int64_t value = t.consumed_regsts(1);
    if (category[value] == kUnset) category[value] = target;
    if (target != MemoryCategory::kWeights) continue;
    // The update computed the value, unless the value was moved on since (ZeRO: an all-gather
    // of the updated shards): walk back to it.
    const plan::Task* update = &producer(value);
    while (MovesData(update->kind()) && update->consumed_regsts_size() > 0) {
      update = &producer(update->consumed_regsts(0));
    }
    updates.push_back(update->id());
  }
  for (int64_t u : updates) {
    for (int64_t in : plan.tasks(static_cast<int>(u)).consumed_regsts()) {
      if (plan.regsts(static_cast<int>(in)).bytes_per_slot() > 0) MarkGradient(plan, in, category);
    }
  }
  for (const plan::Regst& r : plan.regsts()) {
    if (category[r.id()] != kUnset) continue;
    const plan::TaskKind kind = producer(r.id()).kind();
    category[r.id()] = MovesData(kind) && kind != plan::ACC ? MemoryCategory::kCommunication
                                                            : MemoryCategory::kActivations;
  }
  return category;
}

}  // namespace twinflow::compiler
