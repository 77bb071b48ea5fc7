#pragma once
// DeviceWorker: the body of one device thread. It starts the device's actors, then handles its
// queue: messages go to actors, launches run at once (a COLLECTIVE only deposits at the
// rendezvous and completes when its Done arrives; SEND, RECV and collectives spanning ranks go
// to the transport and complete likewise), completions go back to the actors, and
// messages for other actors are posted to their devices' queues. It returns when every actor
// of the device has finished or the run stops; it never throws (errors go to the RunContext,
// naming the task).
//
// On an asynchronous device (a GPU) a launch only enqueues the work; the act completes when a
// fence marked after it has passed. The thread keeps those fences in launch order and, while
// any is outstanding, waits on its queue briefly and polls them, so no task waits for the
// whole device.
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "engine/runtime/run_context.h"

namespace twinflow::runtime {

class DeviceWorker {
 public:
  DeviceWorker(RunContext& ctx, int device, std::vector<int64_t> tasks);
  void Run();

 private:
  void Handle(const WorkItem& item);
  // Carries out the actor's outbox, and the outboxes of the acts it completes on the way.
  void Drain(Outbox& out);
  bool Launch(const runtime::Launch& launch);  // false while a collective is in flight
  void StartCollective(const PreparedTask& task, const runtime::Launch& launch);
  void StartSend(const PreparedTask& task, const runtime::Launch& launch);
  void StartRecv(const PreparedTask& task, const runtime::Launch& launch);
  Transport& transport(const PreparedTask& task) const;  // PlanError in a one-rank run
  // Whether the task's cross-rank act goes through host buffers (host_staging.h): on an
  // asynchronous device, with a transport that reads host memory only.
  bool Staged(const PreparedTask& task) const;
  // A collective member's host copy of its input and host buffer for its output.
  void Stage(CollectiveMember& member);
  // A staged act's arrival: uploads its bytes, and completes the act once that has run.
  void Upload(const WorkItem& item);
  void NoteFinished(int64_t task);
  // Completes an act: the actor's Done, its outbox, the trace span (`stream` 0 compute, 1
  // communication) from `started`.
  // `finished`: when the act really completed (0: now), for the trace.
  void Complete(int64_t task, int stream, int64_t started, int64_t finished = 0);
  // Calls the callbacks of the fences that have passed, oldest first.
  void PollFences();

  struct PendingFence {
    Device::Fence fence;
    int64_t task = 0;  // whose work it follows, named in a device's error
    int64_t piece = 0;
    std::function<void()> on_passed;
  };

  RunContext& ctx_;
  int device_;
  Device& device_ops_;
  Arena& arena_;
  std::deque<PendingFence> pending_;
  std::vector<int64_t> tasks_;
  std::vector<bool> finished_;  // by task id
  int64_t unfinished_ = 0;
};

}  // namespace twinflow::runtime
