#pragma once
// ActGraphRecorder: the graph of a simulated run's acts, as the actors ordered them, for
// execution-trace export (engine/trace/chakra_export.h). An act depends on the acts that
// announced the pieces it reads (RegstReady: the producer's act, an ACC's last accumulation),
// on its task's previous act, and on the acts an order register of the pipeline schedule made
// it wait for; so the exported graph is the Plan's dependencies, unrolled over the run.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "engine/plan/plan.pb.h"
#include "engine/plan/trace_record.h"
#include "engine/runtime/actor.h"

namespace twinflow::sim {

// Lifetime: keeps `plan` by reference; it must outlive this (an ActorDriver member).
class ActGraphRecorder {
 public:
  explicit ActGraphRecorder(const plan::Plan& plan);

  void Launched(const runtime::Launch& launch);
  // `out`: what `task`'s act sent when it finished; its RegstReady announce its pieces.
  void Finished(int64_t task, const runtime::Outbox& out);
  // The current act of `task` ran over [start, end].
  void Timed(int64_t task, int64_t start_ns, int64_t end_ns);

  std::vector<plan::ActRecord> Take() { return std::move(acts_); }

 private:
  struct OrderInput {
    int64_t producer = 0;
    const google::protobuf::RepeatedField<int64_t>* counts = nullptr;
  };

  const plan::Plan& plan_;
  std::vector<plan::ActRecord> acts_;
  std::vector<std::vector<int64_t>> task_acts_;               // by task: its acts so far
  std::vector<std::vector<OrderInput>> order_inputs_;         // by task
  std::map<std::pair<int64_t, int64_t>, int64_t> announced_;  // (regst, piece) -> act
};

}  // namespace twinflow::sim
