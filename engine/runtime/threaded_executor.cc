#include "engine/runtime/threaded_executor.h"

#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_fold.h"
#include "engine/plan/plan_rates.h"
#include "engine/plan/plan_validate.h"
#include "engine/runtime/arena.h"
#include "engine/runtime/binding_assembly.h"
#include "engine/runtime/device_worker.h"
#include "engine/runtime/feed_cache.h"
#include "engine/runtime/plan_tensors.h"
#include "engine/runtime/prepared_task.h"
#include "engine/runtime/run_context.h"
#include "engine/runtime/task_work.h"
#include "engine/runtime/watchdog.h"
#include "kernels/builtin_kernels.h"

namespace twinflow::runtime {
namespace {

void CheckDevices(const plan::Plan& plan, const Transport* transport) {
  const int rank = transport ? transport->rank() : 0;
  for (int d = 0; d < plan.devices_size(); ++d) {
    const plan::Device& device = plan.devices(d);
    const std::string name = "device " + std::to_string(d);
    if (device.id() != d) throw PlanError(name + ": id " + std::to_string(device.id()));
    if (device.type() != plan.devices(0).type()) {
      throw PlanError(name + " is '" + plan::EnumName(device.type()) + "' and device 0 '" +
                      plan::EnumName(plan.devices(0).type()) +
                      "': the runtime has no copies between device types yet");
    }
    if (device.type() == plan::DEVICE_CUDA && !kernels::HaveCudaKernels()) {
      throw InvalidArgumentError(name +
                                 " is 'cuda': this build of twinflow has no CUDA "
                                 "(configure with TWINFLOW_CUDA=ON where the toolkit is)");
    }
    if (transport == nullptr && device.rank() != rank) {
      throw PlanError(name + " belongs to rank " + std::to_string(device.rank()) +
                      ": a Plan of several ranks runs under mpirun, one process per rank");
    }
    if (transport != nullptr && device.rank() >= transport->size()) {
      throw PlanError(name + " belongs to rank " + std::to_string(device.rank()) + ", but " +
                      std::to_string(transport->size()) + " ranks run");
    }
  }
  for (const plan::Task& task : plan.tasks()) {
    if (task.device() < 0 || task.device() >= plan.devices_size()) {
      throw PlanError(TaskName(task) + ": device " + std::to_string(task.device()) +
                      " is out of range");
    }
  }
  for (const plan::Regst& r : plan.regsts()) {
    if (r.producer() < 0 || r.producer() >= plan.tasks_size()) {
      throw PlanError("regst " + std::to_string(r.id()) + ": producer out of range");
    }
  }
}

// Waits for every local device's work, ignoring errors (used where the run's own error, if any,
// is what gets reported).
void SynchronizeQuietly(const std::vector<std::unique_ptr<Device>>& devices) {
  for (const auto& device : devices) {
    try {
      if (device) device->Synchronize();
    } catch (const std::exception&) {
    }
  }
}

// Starts the transport's comm thread for a run and stops it however the run ends (after the
// device threads: it is declared first).
struct TransportRun {
  Transport* transport;
  TransportRun(Transport* t, RunContext& ctx) : transport(t) {
    if (transport) transport->Begin([&ctx](std::exception_ptr e) { ctx.Fail(e); });
  }
  ~TransportRun() {
    if (transport) transport->End();
  }
};

// Joins the device threads however Run leaves, so that no thread outlives it, then waits for
// the work they left on asynchronous devices (a failed or stalled run's kernels must not run
// on into the next run's slots). Errors are the run's to report, not this wait's.
struct ThreadJoiner {
  RunContext& ctx;
  std::vector<std::thread>& threads;
  ~ThreadJoiner() {
    ctx.StopAll();
    for (std::thread& t : threads) {
      if (t.joinable()) t.join();
    }
    SynchronizeQuietly(ctx.devices);
  }
};

// "rank 2 did not answer ...; " for a stall report, or nothing when every rank answered.
std::string Culprits(const std::vector<int>& ranks) {
  if (ranks.empty()) return "";
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return (ranks.size() == 1 ? "rank " : "ranks ") + list +
         " did not answer a liveness probe within " +
         std::to_string(static_cast<int>(kLivenessProbeSeconds)) + " s (stopped, hung or gone); ";
}

// A run that ended otherwise than with every local actor done throws: the first failure of a
// device or the transport, a stall the watchdog caught, or actors left unfinished.
void CheckRunEnd(const RunContext& ctx, RunEnd end, double watchdog_seconds) {
  if (ctx.error) std::rethrow_exception(ctx.error);
  if (end == RunEnd::kTimedOut) {
    std::ostringstream seconds;
    seconds << watchdog_seconds;
    throw TimeoutError(Culprits(ctx.unresponsive_ranks) + "no act completed for " + seconds.str() +
                       " s; waiting:" + DescribeStall(ctx));
  }
  for (const auto& actor : ctx.actors) {
    if (actor && !actor->finished())
      throw PlanError("the run ended with unfinished actors:" + DescribeStall(ctx));
  }
}

// A valid Plan of every device: a folded one (plan_fold.h) leaves out the data-parallel copies
// but the first, which only the simulator stands in for.
const plan::Plan& Runnable(const plan::Plan& plan) {
  plan::ValidatePlan(plan);
  if (plan::DeviceFold::Of(plan).folded()) {
    throw PlanError("this Plan is folded for the simulator (it holds copy 0 of " +
                    std::to_string(plan.fold().copies()) +
                    " data-parallel copies): compile it without folding to run it");
  }
  return plan;
}

// The memory this machine can give now (MemAvailable), or nullopt where it cannot tell.
std::optional<int64_t> AvailableHostBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

// Before any arena is allocated (and zero-filled): the cpu arenas of this process together
// must fit the memory available, or several that fit alone would bring the OOM killer.
void CheckHostMemory(const plan::Plan& plan, const Transport* transport) {
  const int rank = transport ? transport->rank() : 0;
  int64_t total = 0;
  int devices = 0;
  for (const plan::MemoryPlan& memory : plan.memory()) {
    const plan::Device& device = plan.devices(static_cast<int>(memory.device()));
    if (device.rank() != rank || device.type() != plan::DEVICE_CPU) continue;
    total += memory.arena_bytes();
    ++devices;
  }
  const std::optional<int64_t> available = AvailableHostBytes();
  if (available && total > *available) {
    throw OutOfMemoryError("the arenas of this process's " + std::to_string(devices) +
                           " cpu devices need " + std::to_string(total) +
                           " bytes in all, more than the " + std::to_string(*available) +
                           " bytes of memory available (MemAvailable)");
  }
}

}  // namespace

struct ThreadedExecutor::Impl {
  Impl(const plan::Plan& p, const kernels::KernelRegistry& kernels, Transport* t,
       const DeviceFactory& make_device)
      : plan(p), transport(t), rank(t ? t->rank() : 0) {
    CheckDevices(plan, transport);
    CheckHostMemory(plan, transport);
    tasks = PrepareTasks(plan, kernels);
    acts = plan::ActsPerStep(plan);
    for (const plan::Regst& r : plan.regsts()) {
      regst_device.push_back(plan.tasks(static_cast<int>(r.producer())).device());
    }
    // Only this rank's devices get arenas (and threads, and actors).
    const std::vector<DevicePlace> places =
        DevicePlaces(plan, rank, transport ? transport->local_rank() : 0);
    for (int d = 0; d < plan.devices_size(); ++d) {
      devices.push_back(Local(d) ? make_device(plan.devices(d), places[d]) : nullptr);
      arenas.push_back(Local(d) ? std::make_unique<Arena>(plan, d, *devices.back()) : nullptr);
    }
    CheckBindings();
    // The actors check that each task's registers fit its kind (the pieces do not matter).
    for (const plan::Task& task : plan.tasks()) Actor check(plan, task.id(), 1);
    for (const PreparedTask& t : tasks) {
      if (!Local(t.task->device())) continue;
      if (t.task->kind() == plan::SOURCE) ++sources;
      if (t.task->kind() != plan::VARIABLE) continue;
      Tensor slot = arenas[t.task->device()]->View(t.outputs[0], 0);
      try {
        InitVariable(*devices[t.task->device()], t, slot);
      } catch (const Error& e) {
        RethrowPrefixed(e, TaskName(*t.task) + ": ");
      }
      arenas[t.task->device()]->Pin(t.outputs[0]);
    }
    for (const auto& device : devices) {
      if (device) device->Synchronize();  // the initial values are in place before any run
    }
  }

  // One device's kernels may still read another's arena (boxing, all-reduce): all wait before
  // any Device frees its memory.
  ~Impl() { SynchronizeQuietly(devices); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void CheckRegst(int64_t regst, const std::string& what) const {
    if (regst < 0 || regst >= plan.regsts_size()) {
      throw PlanError(what + ": regst " + std::to_string(regst) + " is out of range");
    }
  }

  void CheckBindings() {
    std::set<int64_t> sinks, fetched;
    for (const PreparedTask& t : tasks) {
      if (t.task->kind() == plan::SINK) sinks.insert(t.inputs[0]);
    }
    for (const plan::Binding& b : plan.fetches()) {
      for (const plan::BindingPart& part : b.parts()) {
        CheckRegst(part.regst(), "fetch '" + b.name() + "'");
        fetched.insert(part.regst());
        if (part.contributes() && !sinks.count(part.regst())) {
          throw PlanError("fetch '" + b.name() + "': regst " + std::to_string(part.regst()) +
                          " is not consumed by a SINK task");
        }
      }
    }
    for (int64_t regst : sinks) {
      if (!fetched.count(regst)) {
        throw PlanError("a SINK consumes regst " + std::to_string(regst) +
                        ", which no fetch binding names");
      }
    }
    for (const plan::Binding& b : plan.variables()) {
      for (const plan::BindingPart& part : b.parts()) {
        CheckRegst(part.regst(), "variable '" + b.name() + "'");
        const int64_t producer = plan.regsts(static_cast<int>(part.regst())).producer();
        if (plan.tasks(static_cast<int>(producer)).kind() != plan::VARIABLE) {
          throw PlanError("variable '" + b.name() + "': regst " + std::to_string(part.regst()) +
                          " is not a VARIABLE task's");
        }
      }
    }
  }

  bool Local(int device) const { return plan.devices(device).rank() == rank; }

  const plan::Binding& VariableBinding(const std::string& name) const {
    for (const plan::Binding& b : plan.variables()) {
      if (b.name() == name) return b;
    }
    throw InvalidArgumentError("the plan has no variable '" + name + "'");
  }

  // Slot 0 of every part of a variable binding: views of this rank's parts on cpu devices,
  // host copies of those on other devices, and zeros of the right shape for other ranks' parts.
  std::vector<Tensor> VariableViews(const plan::Binding& b) const {
    std::vector<Tensor> views;
    for (const plan::BindingPart& part : b.parts()) {
      const auto& arena = arenas[regst_device[part.regst()]];
      if (arena) {
        Device& device = *devices[regst_device[part.regst()]];
        Tensor view = arena->View(part.regst(), 0);
        views.push_back(device.type() == DeviceType::kCpu ? std::move(view)
                                                          : device.Download(view));
        continue;
      }
      const plan::TensorDesc& desc = plan.regsts(static_cast<int>(part.regst())).tensor();
      views.push_back(Tensor(ToShape(desc, "variable '" + b.name() + "'"),
                             ToDType(desc.dtype(), "variable '" + b.name() + "'")));
    }
    return views;
  }

  // Writes the host copies VariableViews made for parts on non-cpu devices back to them.
  void StoreParts(const plan::Binding& b, const std::vector<Tensor>& views) const {
    for (int i = 0; i < b.parts_size(); ++i) {
      const int d = regst_device[b.parts(i).regst()];
      if (!arenas[d] || devices[d]->type() == DeviceType::kCpu) continue;
      Tensor slot = arenas[d]->View(b.parts(i).regst(), 0);
      devices[d]->Upload(views[i], slot);
      devices[d]->Synchronize();
    }
  }

  // Fills the other ranks' parts of `views` with their bytes (collective over the ranks).
  void GatherParts(const plan::Binding& b, std::vector<Tensor>& views) const {
    if (!transport) return;
    std::vector<std::byte> mine;
    for (int i = 0; i < b.parts_size(); ++i) {
      if (!arenas[regst_device[b.parts(i).regst()]]) continue;
      mine.insert(mine.end(), views[i].raw(), views[i].raw() + views[i].nbytes());
    }
    const std::vector<std::vector<std::byte>> all = transport->Allgather(mine);
    std::vector<size_t> offset(all.size(), 0);
    for (int i = 0; i < b.parts_size(); ++i) {
      const int owner = plan.devices(regst_device[b.parts(i).regst()]).rank();
      if (owner == rank) continue;
      const std::vector<std::byte>& bytes = all.at(owner);
      if (offset[owner] + views[i].nbytes() > bytes.size()) {
        throw CommError("variable '" + b.name() + "': rank " + std::to_string(owner) +
                        " sent too few bytes");
      }
      std::copy_n(bytes.data() + offset[owner], views[i].nbytes(), views[i].raw());
      offset[owner] += views[i].nbytes();
    }
  }

  std::vector<std::map<std::string, Tensor>> AssembleFetches(const RunContext& ctx,
                                                             int64_t steps) const;
  // Run's parts. An actor for each task of this rank (none for the others'), with the pieces
  // it makes itself in `steps`; returns each device's tasks.
  std::vector<std::vector<int64_t>> MakeActors(RunContext& ctx, int64_t steps,
                                               int64_t pieces_per_step) const;
  // A thread for each device with tasks and the transport's comm thread, watched until they
  // end or stall; every thread has ended when it returns.
  RunEnd RunDevices(RunContext& ctx, const std::vector<std::vector<int64_t>>& device_tasks,
                    double watchdog_seconds) const;
  // The finished run's trace, fetches (gathered from every rank) and arena use into `result`.
  void CollectResults(RunContext& ctx, int64_t steps, RunResult& result) const;

  plan::Plan plan;
  Transport* transport;
  int rank;
  std::vector<PreparedTask> tasks;  // point into `plan`
  std::vector<int64_t> acts;        // per task, per step
  std::vector<int> regst_device;
  std::vector<std::unique_ptr<Device>> devices;  // before the arenas, which use their memory
  std::vector<std::unique_ptr<Arena>> arenas;
  int64_t sources = 0;
  std::atomic<bool> running{false};
};

std::vector<std::map<std::string, Tensor>> ThreadedExecutor::Impl::AssembleFetches(
    const RunContext& ctx, int64_t steps) const {
  std::vector<std::map<std::string, Tensor>> fetches(steps);
  static const std::map<int64_t, Tensor> kNone;
  for (const plan::Binding& b : plan.fetches()) {
    std::vector<const std::map<int64_t, Tensor>*> values;  // by part
    int64_t pieces = -1;
    for (const plan::BindingPart& part : b.parts()) {
      const auto it = ctx.sink_values.find(part.regst());
      values.push_back(it == ctx.sink_values.end() ? &kNone : &it->second);
      if (!part.contributes()) continue;
      const int64_t n = static_cast<int64_t>(values.back()->size());
      if (pieces >= 0 && n != pieces) {
        throw PlanError("fetch '" + b.name() + "': its parts got " + std::to_string(pieces) +
                        " and " + std::to_string(n) + " pieces");
      }
      pieces = n;
    }
    if (pieces < 0) pieces = steps;  // nothing contributes: a zero tensor per step
    if (pieces == 0 || pieces % steps != 0) {
      throw PlanError("fetch '" + b.name() + "' got " + std::to_string(pieces) + " pieces in " +
                      std::to_string(steps) + " steps");
    }
    const int64_t per_step = pieces / steps;
    for (int64_t s = 0; s < steps; ++s) {
      std::vector<Tensor> step_pieces;
      for (int64_t m = 0; m < per_step; ++m) {
        std::vector<const Tensor*> parts;
        for (const auto* v : values) {
          const auto it = v->find(s * per_step + m);
          parts.push_back(it == v->end() ? nullptr : &it->second);
        }
        step_pieces.push_back(AssembleBinding(b, parts));
      }
      fetches[s][b.name()] = StackPieces(step_pieces);
    }
  }
  return fetches;
}

ThreadedExecutor::ThreadedExecutor(const plan::Plan& plan, const kernels::KernelRegistry& kernels,
                                   Transport* transport, const DeviceFactory& make_device)
    : impl_(std::make_unique<Impl>(Runnable(plan), kernels, transport, make_device)) {}

ThreadedExecutor::~ThreadedExecutor() = default;
ThreadedExecutor::ThreadedExecutor(ThreadedExecutor&&) noexcept = default;
ThreadedExecutor& ThreadedExecutor::operator=(ThreadedExecutor&&) noexcept = default;

std::vector<std::vector<int64_t>> ThreadedExecutor::Impl::MakeActors(
    RunContext& ctx, int64_t steps, int64_t pieces_per_step) const {
  std::vector<std::vector<int64_t>> device_tasks(plan.devices_size());
  for (const plan::Task& task : plan.tasks()) {
    if (!Local(task.device())) {
      ctx.actors.push_back(nullptr);
      continue;
    }
    const int64_t pieces = task.kind() == plan::SOURCE     ? steps * pieces_per_step
                           : task.kind() == plan::VARIABLE ? steps
                           : task.kind() == plan::RECV     ? steps * acts[task.id()]
                                                           : 0;
    ctx.actors.push_back(std::make_unique<Actor>(plan, task.id(), pieces));
    device_tasks[task.device()].push_back(task.id());
  }
  return device_tasks;
}

RunEnd ThreadedExecutor::Impl::RunDevices(RunContext& ctx,
                                          const std::vector<std::vector<int64_t>>& device_tasks,
                                          double watchdog_seconds) const {
  std::vector<std::unique_ptr<DeviceWorker>> workers;
  for (int d = 0; d < plan.devices_size(); ++d) {
    if (!device_tasks[d].empty())
      workers.push_back(std::make_unique<DeviceWorker>(ctx, d, device_tasks[d]));
  }
  std::vector<std::thread> threads;
  TransportRun transport_run{transport, ctx};
  ThreadJoiner joiner{ctx, threads};
  {
    std::lock_guard<std::mutex> lock(ctx.state_mutex);
    ctx.devices_running = static_cast<int>(workers.size());
  }
  for (auto& worker : workers) {
    threads.emplace_back([w = worker.get()] { w->Run(); });
  }
  const RunEnd end = WatchRun(ctx, watchdog_seconds);
  // Ask while the transport still runs (and answers others' probes): who is not responding?
  if (end == RunEnd::kTimedOut && transport) {
    ctx.unresponsive_ranks = transport->Unresponsive(kLivenessProbeSeconds);
  }
  return end;
}

void ThreadedExecutor::Impl::CollectResults(RunContext& ctx, int64_t steps,
                                            RunResult& result) const {
  for (auto& device_spans : ctx.spans) {
    result.trace.insert(result.trace.end(), device_spans.begin(), device_spans.end());
  }
  // Other ranks' sinks hold the rest of the fetched parts.
  if (transport) ctx.sink_values = transport->ExchangeSinks(plan, ctx.sink_values);
  if (steps > 0) result.fetches = AssembleFetches(ctx, steps);
  for (const auto& arena : arenas) {
    result.peak_arena_bytes.push_back(arena ? arena->peak_bytes() : 0);
    result.arena_high_water.push_back(arena ? arena->high_water() : 0);
  }
}

RunResult ThreadedExecutor::Run(const FeedFn& feeds, const RunOptions& options) {
  Impl& impl = *impl_;
  if (options.steps < 0) throw InvalidArgumentError("steps must not be negative");
  if (!(options.watchdog_seconds > 0)) {
    throw InvalidArgumentError("watchdog_seconds must be positive");
  }
  if (impl.running.exchange(true)) throw InvalidArgumentError("the executor is already running");
  struct Running {
    std::atomic<bool>& flag;
    ~Running() { flag.store(false); }
  } running{impl.running};

  const auto start = std::chrono::steady_clock::now();
  const plan::Plan& plan = impl.plan;
  const int64_t pieces_per_step = std::max<int64_t>(1, plan.pieces_per_step());
  RunResult result;
  result.fetches.resize(options.steps);
  FeedCache feed_cache(FeedSpecs(options.feed), options.feed, impl.rank, feeds, pieces_per_step,
                       impl.sources);
  RunContext ctx(plan, impl.tasks, impl.devices, impl.arenas, impl.regst_device, feed_cache);
  ctx.transport = impl.transport;
  ctx.trace = options.trace;
  ctx.check_finite = options.check_finite;
  if (options.trace) {
    ctx.spans.resize(plan.devices_size());
    ctx.comm_started.assign(plan.tasks_size(), 0);
  }
  const std::vector<std::vector<int64_t>> device_tasks =
      impl.MakeActors(ctx, options.steps, pieces_per_step);
  for (auto& arena : impl.arenas) {
    if (arena) arena->ResetLiveness();
  }
  const RunEnd end = impl.RunDevices(ctx, device_tasks, options.watchdog_seconds);
  CheckRunEnd(ctx, end, options.watchdog_seconds);
  impl.CollectResults(ctx, options.steps, result);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::vector<FeedSpec> ThreadedExecutor::FeedSpecs(FeedMode mode) const {
  return runtime::FeedSpecs(impl_->plan, impl_->rank, mode);
}

Tensor ThreadedExecutor::Variable(const std::string& name) const {
  if (impl_->running.load())
    throw InvalidArgumentError("variable '" + name + "' read while running");
  const plan::Binding& b = impl_->VariableBinding(name);
  std::vector<Tensor> views = impl_->VariableViews(b);
  impl_->GatherParts(b, views);
  std::vector<const Tensor*> parts;
  for (const Tensor& v : views) parts.push_back(&v);
  return AssembleBinding(b, parts);
}

void ThreadedExecutor::SetVariable(const std::string& name, const Tensor& value) {
  if (impl_->running.load())
    throw InvalidArgumentError("variable '" + name + "' set while running");
  const plan::Binding& b = impl_->VariableBinding(name);
  std::vector<Tensor> views = impl_->VariableViews(b);
  std::vector<Tensor*> parts;
  for (Tensor& v : views) parts.push_back(&v);
  ScatterBinding(b, value, parts);
  impl_->StoreParts(b, views);
}

}  // namespace twinflow::runtime
