#include "engine/runtime/test_executor.h"

#include <algorithm>
#include <memory>
#include <variant>

#include "engine/core/rng.h"
#include "engine/plan/memory_overlaps.h"
#include "engine/plan/plan_rates.h"

namespace twinflow::runtime {

namespace {

// One pool entry: a message for a task, or the completion of that task's act in flight.
struct Event {
  int64_t task = 0;
  bool done = false;
  ActorMessage message;
};

// What the executor knows beyond the pool: the piece in each slot and each act in flight.
struct Memory {
  std::map<std::pair<int64_t, int32_t>, int64_t> contents;  // (regst, slot) -> piece
  std::map<int64_t, Launch> in_flight;                      // task -> its launched act
  // (regst, slot) -> the slots the memory plan puts in overlapping bytes.
  std::map<std::pair<int64_t, int32_t>, std::vector<std::pair<int64_t, int32_t>>> sharing;

  explicit Memory(const plan::Plan& plan) {
    for (const plan::MemoryPlan& m : plan.memory()) {
      for (const auto& [a, b] : plan::OverlappingSlots(plan, m)) {
        sharing[{a.regst, a.slot}].push_back({b.regst, b.slot});
        sharing[{b.regst, b.slot}].push_back({a.regst, a.slot});
      }
    }
  }

  // Writing a slot overwrites whatever the slots sharing its bytes held.
  void Write(const SlotRef& out) {
    contents[{out.regst, out.slot}] = out.piece;
    const auto it = sharing.find({out.regst, out.slot});
    if (it == sharing.end()) return;
    for (const auto& other : it->second) contents[other] = kOverwritten;
  }
  static constexpr int64_t kOverwritten = -2;

  void CheckInputs(const Launch& launch, const char* when, TestRunResult& result) const {
    for (const SlotRef& in : launch.inputs) {
      auto it = contents.find({in.regst, in.slot});
      if (it != contents.end() && it->second == in.piece) continue;
      result.violations.push_back("task " + std::to_string(launch.task) + " act " +
                                  std::to_string(launch.piece) + " " + when + ": regst " +
                                  std::to_string(in.regst) + " slot " + std::to_string(in.slot) +
                                  " does not hold piece " + std::to_string(in.piece));
    }
  }
};

void Collect(const plan::Plan& plan, Outbox& out, std::vector<Event>& pool, Memory& memory,
             TestRunResult& result) {
  for (Launch& launch : out.launches) {
    const auto task = static_cast<size_t>(launch.task);
    memory.CheckInputs(launch, "at launch", result);
    for (const SlotRef& o : launch.outputs) memory.Write(o);
    memory.in_flight[launch.task] = launch;
    result.pieces_seen[task].push_back(launch.piece);
    // A REPEAT reads one input piece over several acts: count it once, at its first act.
    const bool repeat = plan.tasks(static_cast<int>(task)).kind() == plan::REPEAT;
    if (!repeat || launch.first) {
      for (const SlotRef& in : launch.inputs) {
        result.inputs_seen[{launch.task, in.regst}].push_back(in.piece);
      }
    }
    pool.push_back(Event{launch.task, true, {}});
    result.launches.push_back(std::move(launch));
  }
  for (Envelope& envelope : out.messages) {
    pool.push_back(Event{envelope.to_task, false, envelope.message});
  }
  out.launches.clear();
  out.messages.clear();
}

}  // namespace

SourcePiecesFn PiecesFromPlan(const plan::Plan& plan, int64_t steps) {
  const int64_t per_step = std::max<int64_t>(plan.pieces_per_step(), 1);
  auto acts = std::make_shared<std::vector<int64_t>>(plan::ActsPerStep(plan));
  return [&plan, steps, per_step, acts](int64_t task) -> int64_t {
    const plan::TaskKind kind = plan.tasks(static_cast<int>(task)).kind();
    if (kind == plan::RECV) return (*acts)[task] * steps;
    return kind == plan::SOURCE ? per_step * steps : steps;
  };
}

TestRunResult RunActors(const plan::Plan& plan, const SourcePiecesFn& source_pieces,
                        const TestRunOptions& options) {
  TestRunResult result;
  const auto n = static_cast<size_t>(plan.tasks_size());
  result.pieces_seen.resize(n);
  std::vector<std::unique_ptr<Actor>> actors;
  for (int64_t task = 0; task < plan.tasks_size(); ++task) {
    const plan::TaskKind kind = plan.tasks(static_cast<int>(task)).kind();
    const bool source = kind == plan::SOURCE || kind == plan::VARIABLE || kind == plan::RECV;
    actors.push_back(std::make_unique<Actor>(plan, task, source ? source_pieces(task) : 0));
  }
  std::vector<Event> pool;
  Memory memory(plan);
  Outbox out;
  for (auto& actor : actors) {
    actor->Start(out);
    Collect(plan, out, pool, memory, result);
  }
  Rng rng(options.seed);
  size_t head = 0;  // the next event to deliver; those before it are done
  bool stopped = false;
  while (head < pool.size() && !stopped) {
    if (result.events >= options.max_events) {
      result.report = "stopped after " + std::to_string(result.events) + " events";
      stopped = true;
      break;
    }
    if (!options.in_order) {  // move a random pending event to the head
      const auto left = static_cast<int64_t>(pool.size() - head);
      std::swap(pool[head], pool[head + static_cast<size_t>(rng.UniformInt(0, left - 1))]);
    }
    Event event = std::move(pool[head]);
    ++head;
    ++result.events;
    if (event.task < 0 || event.task >= plan.tasks_size()) {
      result.report = "a message for unknown task " + std::to_string(event.task);
      stopped = true;
      break;
    }
    Actor& actor = *actors[static_cast<size_t>(event.task)];
    if (event.done) {
      auto it = memory.in_flight.find(event.task);
      if (it != memory.in_flight.end()) {
        memory.CheckInputs(it->second, "when done", result);
        memory.in_flight.erase(it);
      }
      actor.Done(out);
    } else {
      actor.Receive(event.message, out);
    }
    Collect(plan, out, pool, memory, result);
    if (head > 4096 && head * 2 > pool.size()) {  // keep the pool from growing without bound
      pool.erase(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(head));
      head = 0;
    }
  }
  result.finished = true;
  for (const auto& actor : actors) {
    result.acts.push_back(actor->acts());
    if (actor->finished()) continue;
    result.finished = false;
    result.report += (result.report.empty() ? "" : "\n") + actor->WaitingOn();
  }
  result.deadlocked = !result.finished && !stopped;
  return result;
}

TestRunResult RunWithRandomDelivery(const plan::Plan& plan, int64_t steps, uint64_t seed) {
  return RunActors(plan, PiecesFromPlan(plan, steps), TestRunOptions{seed});
}

TestRunResult RunWithRandomDelivery(const plan::Plan& plan, const SourcePiecesFn& source_pieces,
                                    uint64_t seed) {
  return RunActors(plan, source_pieces, TestRunOptions{seed});
}

}  // namespace twinflow::runtime
