#include "engine/runtime/run_context.h"

#include <chrono>
#include <string>
#include <utility>
#include <variant>

#include "engine/core/error.h"

namespace twinflow::runtime {

RunContext::RunContext(const plan::Plan& plan, const std::vector<PreparedTask>& tasks,
                       const std::vector<std::unique_ptr<Device>>& devices,
                       const std::vector<std::unique_ptr<Arena>>& arenas,
                       const std::vector<int>& regst_device, FeedCache& feeds)
    : plan(plan),
      tasks(tasks),
      devices(devices),
      arenas(arenas),
      regst_device(regst_device),
      feeds(feeds) {
  for (size_t d = 0; d < arenas.size(); ++d) queues.push_back(std::make_unique<MessageQueue>());
}

int64_t RunContext::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Tensor RunContext::SlotView(int64_t regst, int32_t slot) const {
  if (regst < 0 || regst >= static_cast<int64_t>(regst_device.size())) {
    throw PlanError("regst " + std::to_string(regst) + " is out of range");
  }
  const auto& arena = arenas[regst_device[regst]];
  if (!arena) {
    throw PlanError("regst " + std::to_string(regst) + " is on device " +
                    std::to_string(regst_device[regst]) + " of another rank");
  }
  return arena->View(regst, slot);
}

Device& RunContext::DeviceOf(const PreparedTask& task) const {
  const auto& device = devices.at(task.task->device());
  if (!device) throw PlanError(TaskName(*task.task) + " runs on another rank");
  return *device;
}

void RunContext::Post(WorkItem item) {
  if (item.task < 0 || item.task >= static_cast<int64_t>(tasks.size())) {
    throw PlanError("a message for task " + std::to_string(item.task) + ", which does not exist");
  }
  // Urgent: a returned slot (it only makes room), and a message that may start a
  // communication act (handing it to its peers before this device's next kernel lets it
  // overlap that kernel).
  const plan::Task& to = *tasks[item.task].task;
  const bool comm =
      to.kind() == plan::COLLECTIVE || to.kind() == plan::SEND || to.kind() == plan::RECV;
  const bool urgent = !item.done && (comm || std::holds_alternative<RegstFree>(item.message));
  queues[to.device()]->Push(std::move(item), urgent);
}

void RunContext::PostDone(int64_t task) {
  WorkItem item{task, true, {}};
  if (trace) item.finished_ns = NowNs();
  Post(std::move(item));
}

void RunContext::PostArrival(int64_t task, std::shared_ptr<const StagedArrival> arrival) {
  WorkItem item{task, true, {}};
  if (trace) item.finished_ns = NowNs();
  item.arrival = std::move(arrival);
  Post(std::move(item));
}

void RunContext::RecordSink(int64_t regst, int64_t piece, Tensor value) {
  std::lock_guard<std::mutex> lock(sink_mutex_);
  sink_values[regst][piece] = std::move(value);
}

void RunContext::Fail(std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> lock(state_mutex);
    if (!error) error = e;
  }
  StopAll();
}

void RunContext::DeviceFinished() {
  {
    std::lock_guard<std::mutex> lock(state_mutex);
    --devices_running;
  }
  state_changed.notify_all();
}

void RunContext::StopAll() {
  stop.store(true);
  for (auto& q : queues) q->Wake();
  { std::lock_guard<std::mutex> lock(state_mutex); }
  state_changed.notify_all();
}

}  // namespace twinflow::runtime
