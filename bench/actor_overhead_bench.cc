// The Actor state machine's own cost, with no threads, queues or kernels: a chain
// SOURCE -> N COMPUTE -> SINK, every register with `slots` slots, driven by a tight
// single-threaded loop that delivers messages first in, first out and reports Done at once for
// every Launch. What is left is the bookkeeping of one act (take the input slots, launch, announce
// the output, return the input) and the messages it sends, which is the floor under every act
// the ThreadedExecutor runs. Issue 4 targets at most 1 us per act.
//
// Arguments: N (COMPUTE tasks), slots. Counters: ns_per_act (the loop's thread CPU time divided
// by every actor's acts, (N + 2) x pieces), wall_ns_per_act (the same with wall time, inflated
// when the cores are shared), msgs_per_act (messages delivered per act) and acts (per
// iteration). Building the actors and checking them afterwards are not timed.
#include <benchmark/benchmark.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "engine/plan/plan.pb.h"
#include "engine/runtime/actor.h"

namespace twinflow::runtime {
namespace {

constexpr int64_t kPieces = 10000;

// SOURCE -> `computes` COMPUTE tasks -> SINK on one device; task i produces regst i, consumed
// by task i + 1.
plan::Plan ChainPlan(int64_t computes, int32_t slots) {
  plan::Plan plan;
  plan::Device* device = plan.add_devices();
  device->set_id(0);
  device->set_type(plan::DEVICE_CPU);
  plan.set_pieces_per_step(1);
  const int64_t tasks = computes + 2;
  for (int64_t i = 0; i < tasks; ++i) {
    plan::Task* task = plan.add_tasks();
    task->set_id(i);
    task->set_kind(i == 0 ? plan::SOURCE : i == tasks - 1 ? plan::SINK : plan::COMPUTE);
    task->set_name(i == 0 ? "source" : i == tasks - 1 ? "sink" : "noop" + std::to_string(i));
    if (i > 0) task->add_consumed_regsts(i - 1);
    if (i < tasks - 1) {
      task->add_produced_regsts(i);
      plan::Regst* regst = plan.add_regsts();
      regst->set_id(i);
      regst->set_producer(i);
      regst->add_consumers(i + 1);
      regst->set_slots(slots);
    }
  }
  return plan;
}

// This thread's CPU time: on a shared machine the wall time counts other people's work too.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// One pending event: a message for an actor, or the Done of its launched act.
struct Event {
  int64_t task = 0;
  bool done = false;
  ActorMessage message;
};

// Moves an Outbox's launches (as Dones) and messages onto the FIFO, and empties it.
void Enqueue(Outbox& out, std::deque<Event>& queue) {
  for (const Launch& launch : out.launches) queue.push_back(Event{launch.task, true, {}});
  for (Envelope& envelope : out.messages) {
    queue.push_back(Event{envelope.to_task, false, envelope.message});
  }
  out.launches.clear();
  out.messages.clear();
}

// Runs every actor to the end; returns the messages delivered.
int64_t DriveToEnd(std::vector<Actor>& actors, std::deque<Event>& queue) {
  Outbox out;
  for (Actor& actor : actors) {
    actor.Start(out);
    Enqueue(out, queue);
  }
  int64_t messages = 0;
  while (!queue.empty()) {
    const Event event = queue.front();
    queue.pop_front();
    Actor& actor = actors[static_cast<size_t>(event.task)];
    if (event.done) {
      actor.Done(out);
    } else {
      actor.Receive(event.message, out);
      ++messages;
    }
    Enqueue(out, queue);
  }
  return messages;
}

void BM_ActorChain(benchmark::State& state) {
  const int64_t computes = state.range(0);
  const int32_t slots = static_cast<int32_t>(state.range(1));
  const plan::Plan plan = ChainPlan(computes, slots);
  const int64_t tasks = plan.tasks_size();
  std::deque<Event> queue;
  int64_t messages = 0;
  double cpu_seconds = 0, wall_seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Actor> actors;
    actors.reserve(static_cast<size_t>(tasks));
    for (int64_t t = 0; t < tasks; ++t) actors.emplace_back(plan, t, kPieces);
    state.ResumeTiming();

    const double cpu_start = ThreadCpuSeconds();
    const auto wall_start = std::chrono::steady_clock::now();
    messages = DriveToEnd(actors, queue);
    cpu_seconds += ThreadCpuSeconds() - cpu_start;
    wall_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

    state.PauseTiming();
    for (const Actor& actor : actors) {
      if (!actor.finished() || actor.acts() != kPieces) {
        state.SkipWithError(("actor " + std::to_string(actor.task()) + " did " +
                             std::to_string(actor.acts()) + " acts: " + actor.WaitingOn())
                                .c_str());
        break;
      }
    }
    state.ResumeTiming();
  }
  const double acts = static_cast<double>(tasks * kPieces);
  const double all_acts = acts * static_cast<double>(state.iterations());
  state.counters["ns_per_act"] = all_acts > 0 ? cpu_seconds * 1e9 / all_acts : 0;
  state.counters["wall_ns_per_act"] = all_acts > 0 ? wall_seconds * 1e9 / all_acts : 0;
  state.counters["msgs_per_act"] = static_cast<double>(messages) / acts;
  state.counters["acts"] = acts;
}

BENCHMARK(BM_ActorChain)
    ->ArgNames({"N", "slots"})
    ->ArgsProduct({{1, 8, 64}, {1, 2}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace twinflow::runtime

BENCHMARK_MAIN();
