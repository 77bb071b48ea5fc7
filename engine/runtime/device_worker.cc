#include "engine/runtime/device_worker.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <thread>
#include <utility>

#include "engine/core/error.h"
#include "engine/runtime/collective_compute.h"
#include "engine/runtime/task_work.h"

namespace twinflow::runtime {
namespace {

// Runs fn; an error comes out with the task named, in the same kind.
template <typename Fn>
void Named(const plan::Task& task, int64_t piece, Fn fn) {
  const std::string prefix = TaskName(task) + " piece " + std::to_string(piece) + ": ";
  try {
    fn();
  } catch (const Error& e) {
    RethrowPrefixed(e, prefix);
  } catch (const std::bad_alloc&) {
    throw OutOfMemoryError(prefix + "out of host memory");
  } catch (const std::exception& e) {
    throw InvalidArgumentError(prefix + e.what());
  }
}

}  // namespace

DeviceWorker::DeviceWorker(RunContext& ctx, int device, std::vector<int64_t> tasks)
    : ctx_(ctx),
      device_(device),
      device_ops_(*ctx.devices[device]),
      arena_(*ctx.arenas[device]),
      tasks_(std::move(tasks)),
      finished_(ctx.tasks.size(), false) {}

void DeviceWorker::Run() {
  try {
    device_ops_.BindThread();
    unfinished_ = static_cast<int64_t>(tasks_.size());
    for (int64_t task : tasks_) {
      Outbox out;
      ctx_.actors[task]->Start(out);
      Drain(out);
      NoteFinished(task);
    }
    WorkItem item;
    MessageQueue& queue = *ctx_.queues[device_];
    while (unfinished_ > 0 && !ctx_.stop.load()) {
      if (pending_.empty()) {
        if (!queue.Pop(item, ctx_.stop)) break;
        Handle(item);
        continue;
      }
      PollFences();
      // With device work in flight the thread spins (poll, take what came, yield) instead of
      // sleeping: a timed wait sleeps 50 us or more (the kernel's timer slack), and each act
      // that waits for a finished kernel would leave the device idle that long; the chains of a
      // training step have thousands of them. A GPU machine has cores to spare for it.
      if (queue.PopFor(item, ctx_.stop, std::chrono::microseconds(0))) {
        Handle(item);
      } else {
        std::this_thread::yield();
      }
    }
  } catch (...) {
    ctx_.Fail(std::current_exception());
  }
  ctx_.DeviceFinished();
}

void DeviceWorker::Handle(const WorkItem& item) {
  if (item.done && item.arrival) {  // a communication act staged through host memory
    Upload(item);
    return;
  }
  if (item.done) {  // a communication act completing
    Complete(item.task, 1, ctx_.trace ? ctx_.comm_started[item.task] : 0, item.finished_ns);
    return;
  }
  Actor& actor = *ctx_.actors.at(item.task);
  Outbox out;
  if (const auto* free = std::get_if<RegstFree>(&item.message)) {
    if (arena_.Holds(free->regst)) arena_.Release(free->regst, free->slot);
  }
  actor.Receive(item.message, out);
  Drain(out);
  NoteFinished(item.task);
}

void DeviceWorker::Complete(int64_t task, int stream, int64_t started, int64_t finished) {
  if (ctx_.trace) {
    ctx_.spans[device_].push_back(
        {task, stream, started, finished > 0 ? finished : RunContext::NowNs()});
  }
  Outbox out;
  ctx_.actors.at(task)->Done(out);
  ctx_.acts_done.fetch_add(1, std::memory_order_relaxed);
  Drain(out);
  NoteFinished(task);
}

void DeviceWorker::PollFences() {
  while (!pending_.empty()) {
    PendingFence& front = pending_.front();
    bool passed = false;
    Named(*ctx_.tasks[front.task].task, front.piece,
          [&] { passed = device_ops_.Passed(front.fence); });
    if (!passed) return;
    // The callback may launch more work, which appends fences: take it out first.
    const std::function<void()> on_passed = std::move(front.on_passed);
    pending_.pop_front();
    on_passed();
  }
}

void DeviceWorker::Drain(Outbox& out) {
  while (true) {
    // Returned slots first: the queues let them and messages to communication acts jump
    // ahead (RunContext::Post), and a slot must be free before an act it made room for starts.
    std::stable_partition(out.messages.begin(), out.messages.end(), [](const Envelope& e) {
      return std::holds_alternative<RegstFree>(e.message);
    });
    for (Envelope& e : out.messages) ctx_.Post(WorkItem{e.to_task, false, std::move(e.message)});
    std::vector<runtime::Launch> launches = std::move(out.launches);
    out = Outbox{};
    if (launches.empty()) return;
    for (const runtime::Launch& launch : launches) {
      if (!Launch(launch)) continue;
      ctx_.actors.at(launch.task)->Done(out);
      ctx_.acts_done.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

bool DeviceWorker::Launch(const runtime::Launch& launch) {
  if (launch.task < 0 || launch.task >= static_cast<int64_t>(ctx_.tasks.size())) {
    throw PlanError("launch of task " + std::to_string(launch.task) + ", which does not exist");
  }
  const PreparedTask& task = ctx_.tasks[launch.task];
  bool complete = true;
  const int64_t start = ctx_.trace ? RunContext::NowNs() : 0;
  Named(*task.task, launch.piece, [&] {
    for (const SlotRef& s : launch.outputs) {
      if (arena_.Holds(s.regst)) arena_.MarkLive(s.regst, s.slot);
    }
    const plan::TaskKind kind = task.task->kind();
    if (kind == plan::COLLECTIVE || kind == plan::SEND || kind == plan::RECV) {
      if (kind == plan::COLLECTIVE) StartCollective(task, launch);
      if (kind == plan::SEND) StartSend(task, launch);
      if (kind == plan::RECV) StartRecv(task, launch);
      complete = false;
    } else {
      RunTaskWork(ctx_, task, launch);
      if (device_ops_.asynchronous()) {  // done when the device has run it
        const int64_t id = launch.task;
        pending_.push_back(
            {device_ops_.Mark(), id, launch.piece, [this, id, start] { Complete(id, 0, start); }});
        complete = false;
      }
    }
  });
  if (ctx_.trace) {
    if (complete) {
      ctx_.spans[device_].push_back({launch.task, 0, start, RunContext::NowNs()});
    } else {
      ctx_.comm_started[launch.task] = start;
    }
  }
  return complete;
}

void DeviceWorker::StartCollective(const PreparedTask& task, const runtime::Launch& launch) {
  const plan::Task& t = *task.task;
  CollectiveMember member{t.id(), device_, t.collective().member(), {}, nullptr};
  for (size_t k = 0; k < task.inputs.size(); ++k) {
    const SlotRef& in = FindSlot(launch.inputs, task.inputs[k], launch);
    const SlotRef& out = FindSlot(launch.outputs, task.outputs[k], launch);
    member.tensors.push_back(
        {ctx_.SlotView(in.regst, in.slot), ctx_.SlotView(out.regst, out.slot)});
  }
  // A bucket the transport does not take as it is goes to it packed on the host.
  if (task.spans_ranks &&
      (Staged(task) || (member.tensors.size() > 1 && !transport(task).TakesBucket(t)))) {
    Stage(member);
  }
  // Members of this process meet first; across ranks the last of them hands the transport
  // the local part.
  auto members = ctx_.rendezvous.Arrive(t.collective().group(), t.issue_order(), launch.piece,
                                        task.group_size, task.local_members, std::move(member));
  if (!members) return;  // the last member to arrive computes
  if (task.spans_ranks) {
    // Each member completes on its own device's thread, uploading first where staged.
    std::vector<std::pair<int64_t, std::shared_ptr<const StagedArrival>>> arrivals;
    for (const CollectiveMember& m : *members) arrivals.emplace_back(m.task, m.staged);
    RunContext& ctx = ctx_;
    Transport& transport = this->transport(task);
    transport.Collective(t, launch.piece, std::move(*members), [&ctx, arrivals] {
      for (const auto& [task, arrival] : arrivals) {
        if (arrival) {
          ctx.PostArrival(task, arrival);
        } else {
          ctx.PostDone(task);
        }
      }
    });
    return;
  }
  std::vector<int64_t> tasks;
  for (const CollectiveMember& m : *members) tasks.push_back(m.task);
  RunContext& ctx = ctx_;
  const auto done = [&ctx, tasks] {
    for (int64_t task : tasks) ctx.PostDone(task);
  };
  ComputeCollective(device_ops_, t.collective(), task.reduce_op, *members);
  if (device_ops_.asynchronous()) {
    pending_.push_back({device_ops_.Mark(), t.id(), launch.piece, done});
  } else {
    done();
  }
}

Transport& DeviceWorker::transport(const PreparedTask& task) const {
  if (ctx_.transport == nullptr) {
    throw PlanError(TaskName(*task.task) + " talks to another rank, and this run has no transport");
  }
  return *ctx_.transport;
}

bool DeviceWorker::Staged(const PreparedTask& task) const {
  return device_ops_.asynchronous() && !transport(task).reads_device_memory();
}

void DeviceWorker::Stage(CollectiveMember& member) {
  auto arrival = std::make_shared<StagedArrival>();
  CollectiveTensors& first = member.tensors.front();
  if (member.tensors.size() == 1) {
    // In place, the host output is the host input, as the slots are one on the device.
    const bool in_place = first.input.raw() == first.output.raw();
    Tensor input = device_ops_.Download(first.input);
    arrival->host =
        in_place ? std::move(input) : Tensor(first.output.shape(), first.output.dtype());
    arrival->slots.push_back(std::move(first.output));
    first.input = in_place ? arrival->host.AsView() : std::move(input);
    first.output = arrival->host.AsView();
    member.staged = std::move(arrival);
    return;
  }
  // A bucket: every input packed into one host buffer, reduced there in place.
  int64_t elements = 0;
  for (const CollectiveTensors& c : member.tensors) elements += c.input.numel();
  arrival->host = Tensor(Shape{elements}, first.input.dtype());
  std::byte* at = arrival->host.raw();
  const bool on_host = device_ops_.type() == DeviceType::kCpu;
  for (CollectiveTensors& c : member.tensors) {
    const Tensor downloaded = on_host ? Tensor() : device_ops_.Download(c.input);
    const Tensor& bytes = on_host ? c.input : downloaded;
    std::memcpy(at, bytes.raw(), static_cast<size_t>(bytes.nbytes()));
    at += bytes.nbytes();
    arrival->slots.push_back(std::move(c.output));
  }
  member.tensors.clear();
  member.tensors.push_back({arrival->host.AsView(), arrival->host.AsView()});
  member.staged = std::move(arrival);
}

void DeviceWorker::StartSend(const PreparedTask& task, const runtime::Launch& launch) {
  Transport& t = transport(task);
  const SlotRef& in = FindSlot(launch.inputs, task.inputs[0], launch);
  RunContext& ctx = ctx_;
  const int64_t id = task.task->id();
  if (t.reads_device_memory()) {
    const SendBox box{task.copies[0].src, task.send_shape, task.send_dtype, task.copies[0].dst};
    t.SendFromDevice(*task.task, launch.piece, ctx_.SlotView(in.regst, in.slot), box,
                     [&ctx, id] { ctx.PostDone(id); });
    return;
  }
  const Tensor view = ctx_.SlotView(in.regst, in.slot);
  const bool staged = Staged(task);
  const Tensor downloaded = staged ? device_ops_.Download(view) : Tensor();
  Tensor packed(task.send_shape, task.send_dtype);
  packed.CopyRegionFrom(staged ? downloaded : view, task.copies[0].src, task.copies[0].dst);
  std::vector<std::byte> payload(packed.raw(), packed.raw() + packed.nbytes());
  t.Send(*task.task, launch.piece, std::move(payload), [&ctx, id] { ctx.PostDone(id); });
}

void DeviceWorker::StartRecv(const PreparedTask& task, const runtime::Launch& launch) {
  Transport& t = transport(task);
  const SlotRef& out = FindSlot(launch.outputs, task.outputs[0], launch);
  RunContext& ctx = ctx_;
  const int64_t id = task.task->id();
  Tensor slot = ctx_.SlotView(out.regst, out.slot);
  if (!Staged(task)) {
    t.Recv(*task.task, launch.piece, std::move(slot), [&ctx, id] { ctx.PostDone(id); });
    return;
  }
  auto arrival = std::make_shared<StagedArrival>();
  arrival->host = Tensor(slot.shape(), slot.dtype());
  arrival->slots.push_back(std::move(slot));
  t.Recv(*task.task, launch.piece,
         Tensor::View(arrival->host.shape(), arrival->host.dtype(), arrival->host.raw()),
         [&ctx, id, arrival] { ctx.PostArrival(id, arrival); });
}

void DeviceWorker::Upload(const WorkItem& item) {
  // The host bytes go into the slots; the act completes once the uploads have run.
  std::byte* at = const_cast<std::byte*>(item.arrival->host.raw());
  for (const Tensor& s : item.arrival->slots) {
    Tensor slot = Tensor::View(s.shape(), s.dtype(), const_cast<std::byte*>(s.raw()));
    device_ops_.Upload(Tensor::View(s.shape(), s.dtype(), at), slot);
    at += s.nbytes();
  }
  const int64_t task = item.task;
  const int64_t started = ctx_.trace ? ctx_.comm_started[task] : 0;
  const int64_t finished = item.finished_ns;
  pending_.push_back({device_ops_.Mark(), task, 0,
                      [this, task, started, finished] { Complete(task, 1, started, finished); }});
}

void DeviceWorker::NoteFinished(int64_t task) {
  if (finished_[task] || !ctx_.actors[task]->finished()) return;
  finished_[task] = true;
  --unfinished_;
}

}  // namespace twinflow::runtime
