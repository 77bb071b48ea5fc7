#pragma once
// RunContext: what the device threads of one ThreadedExecutor::Run share: the prepared tasks,
// the arenas, every device's queue, the actors (each touched only by its device's thread),
// the collective rendezvous, the transport to other ranks, the feeds, the values sinks hand to
// the host, and the run's
// state: progress for the watchdog, the first error, the stop flag.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/plan/plan.pb.h"
#include "engine/plan/trace_record.h"
#include "engine/runtime/actor.h"
#include "engine/runtime/arena.h"
#include "engine/runtime/device.h"
#include "engine/runtime/feed_cache.h"
#include "engine/runtime/message_queue.h"
#include "engine/runtime/prepared_task.h"
#include "engine/runtime/rendezvous.h"
#include "engine/runtime/transport.h"

namespace twinflow::runtime {

// Lifetime: the plan, tasks, devices, arenas, regst_device and feeds it refers to must outlive
// it; ThreadedExecutor::Run makes one per run from its Impl, which owns them all.
struct RunContext {
  RunContext(const plan::Plan& plan, const std::vector<PreparedTask>& tasks,
             const std::vector<std::unique_ptr<Device>>& devices,
             const std::vector<std::unique_ptr<Arena>>& arenas,
             const std::vector<int>& regst_device, FeedCache& feeds);

  const plan::Plan& plan;
  const std::vector<PreparedTask>& tasks;
  const std::vector<std::unique_ptr<Device>>& devices;  // by device; null for other ranks'
  const std::vector<std::unique_ptr<Arena>>& arenas;    // by device
  const std::vector<int>& regst_device;                 // the device whose arena holds a regst
  FeedCache& feeds;
  Transport* transport = nullptr;                     // null in a one-rank run
  std::vector<std::unique_ptr<MessageQueue>> queues;  // by device
  std::vector<std::unique_ptr<Actor>> actors;         // by task; null for other ranks' tasks
  Rendezvous rendezvous;

  // A view of a slot, on whichever device holds it.
  Tensor SlotView(int64_t regst, int32_t slot) const;
  // The Device of a task (PlanError for another rank's).
  Device& DeviceOf(const PreparedTask& task) const;
  // Delivers an item to the queue of the task's device (PlanError for an unknown task).
  void Post(WorkItem item);
  // A communication act of `task` completed (any thread): its device finishes it.
  void PostDone(int64_t task);
  // As PostDone, for an act staged through host memory: its device uploads `arrival` first.
  void PostArrival(int64_t task, std::shared_ptr<const StagedArrival> arrival);

  // SINK values, sink_values[regst][piece], assembled into fetches after the run.
  void RecordSink(int64_t regst, int64_t piece, Tensor value);
  SinkValues sink_values;

  // Tracing (RunOptions::trace): spans per device, each written by its device's thread only,
  // and when each in-flight communication act started.
  bool trace = false;
  bool check_finite = false;                        // RunOptions::check_finite
  std::vector<int> unresponsive_ranks;              // after a stall: Transport::Unresponsive
  std::vector<std::vector<plan::TraceSpan>> spans;  // by device
  std::vector<int64_t> comm_started;                // by task
  static int64_t NowNs();

  // Run state.
  std::atomic<bool> stop{false};
  std::atomic<int64_t> acts_done{0};
  void Fail(std::exception_ptr error);  // the first error wins; stops every thread
  void DeviceFinished();
  void StopAll();
  std::mutex state_mutex;
  std::condition_variable state_changed;
  int devices_running = 0;
  std::exception_ptr error;

 private:
  std::mutex sink_mutex_;
};

}  // namespace twinflow::runtime
