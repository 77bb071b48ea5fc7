#include "simulator/actor_driver.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <variant>

#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_fold.h"
#include "engine/plan/plan_rates.h"

namespace twinflow::sim {
namespace {

Nanos ToNanos(double seconds) { return static_cast<Nanos>(std::llround(seconds * 1e9)); }

// Total length of the union of intervals, minus where they overlap `cover` (sorted, disjoint).
double UncoveredSeconds(std::vector<std::pair<Nanos, Nanos>> spans,
                        const std::vector<std::pair<Nanos, Nanos>>& cover) {
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<Nanos, Nanos>> merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, s.second);
    } else {
      merged.push_back(s);
    }
  }
  Nanos uncovered = 0;
  size_t c = 0;
  for (const auto& [begin, end] : merged) {
    Nanos at = begin;
    while (c < cover.size() && cover[c].second <= at) ++c;
    for (size_t k = c; k < cover.size() && cover[k].first < end; ++k) {
      if (cover[k].first > at) uncovered += cover[k].first - at;
      at = std::max(at, cover[k].second);
    }
    if (at < end) uncovered += end - at;
  }
  return static_cast<double>(uncovered) * 1e-9;
}

// On a CPU host (the spec has cores_per_node) its cores, shared by the device threads, their
// comm threads and the ranks' pollers (CoreThreads); else null.
std::unique_ptr<CoreSharing> MakeCores(EventQueue& queue, const plan::Plan& plan,
                                       const Topology& topology) {
  const ClusterSpec& spec = topology.spec();
  if (spec.cores_per_node() <= 0) return nullptr;
  return std::make_unique<CoreSharing>(queue, spec.nodes(), spec.cores_per_node(),
                                       CoreThreads(plan));
}

// Where logical devices share an accelerator (shared_devices.h), its compute: one "core" per
// cluster device, shared by the device and comm streams of its logical devices; else null.
std::unique_ptr<CoreSharing> MakeGpus(EventQueue& queue, const plan::Plan& plan,
                                      const Topology& topology,
                                      const std::vector<int>& cluster_device) {
  if (!SharesDevices(cluster_device)) return nullptr;
  return std::make_unique<CoreSharing>(queue, topology.devices(), 1, CoreThreads(plan));
}

}  // namespace

ActorDriver::ActorDriver(const plan::Plan& plan, const Topology& topology,
                         const SimOptions& options, EventQueue& queue, NetworkApi& network)
    : plan_(plan),
      topology_(topology),
      options_(options),
      queue_(queue),
      cluster_device_(ClusterDevicesOf(plan, topology, options.physical_devices)),
      timing_(plan, topology, cluster_device_),
      memory_(plan, options.trace),
      cores_(MakeCores(queue, plan, topology)),
      gpus_(MakeGpus(queue, plan, topology, cluster_device_)),
      comm_(plan, topology, cluster_device_, network, timing_, cores_.get(), gpus_.get(),
            options.data_parallel_replicas,
            [this](int64_t task, Nanos start, Nanos end) { Communicated(task, start, end); }) {
  const int devices = plan.devices_size();
  device_free_.assign(devices, 0);
  waiting_.resize(devices);
  if (cores_ || gpus_) acts_.resize(devices);
  compute_spans_.resize(devices);
  comm_spans_.resize(devices);
  flops_.assign(devices, 0);
  if (options.act_graph) graph_ = std::make_unique<ActGraphRecorder>(plan);
  const std::vector<int64_t> acts = plan::ActsPerStep(plan);
  const int64_t per_step = std::max<int64_t>(1, plan.pieces_per_step());
  for (const plan::Task& t : plan.tasks()) {  // an ACC acts once per input piece
    const int64_t rate = t.kind() == plan::ACC ? std::max<int64_t>(1, t.acc_count()) : 1;
    total_acts_ += acts[t.id()] * rate * options.steps;
  }
  for (const plan::Task& t : plan.tasks()) {
    const int64_t pieces = t.kind() == plan::SOURCE     ? options.steps * per_step
                           : t.kind() == plan::VARIABLE ? options.steps
                           : t.kind() == plan::RECV     ? options.steps * acts[t.id()]
                                                        : 0;
    actors_.push_back(std::make_unique<runtime::Actor>(plan, t.id(), pieces));
  }
}

SimResult ActorDriver::Run() {
  for (auto& actor : actors_) {
    runtime::Outbox out;
    actor->Start(out);
    Process(out);
  }
  const int64_t every = std::max<int64_t>(1, options_.progress_every);
  while (queue_.RunNext()) {
    if (options_.progress && queue_.executed() % every == 0) {
      options_.progress(SimProgress{queue_.executed(), static_cast<double>(queue_.now()) * 1e-9,
                                    acts_launched_, total_acts_});
    }
  }
  SimResult result = Report();
  if (graph_) result.trace.acts = graph_->Take();
  return result;
}

// Delivers `out`'s messages through the event queue (so their order is the queue's) and
// launches its acts.
void ActorDriver::Process(runtime::Outbox& out) {
  for (runtime::Envelope& e : out.messages) {
    const int64_t task = e.to_task;
    runtime::ActorMessage message = std::move(e.message);
    queue_.Schedule(queue_.now(), [this, task, message] {
      if (const auto* free = std::get_if<runtime::RegstFree>(&message)) {
        memory_.Returned(*free, queue_.now());
      }
      runtime::Outbox next;
      actors_[task]->Receive(message, next);
      Process(next);
    });
  }
  for (const runtime::Launch& launch : out.launches) Launch(launch);
  out = runtime::Outbox{};
}

void ActorDriver::Finish(int64_t task, Nanos at) {
  queue_.Schedule(at, [this, task] {
    runtime::Outbox next;
    actors_[task]->Done(next);
    if (graph_) graph_->Finished(task, next);
    Process(next);
  });
}

void ActorDriver::Launch(const runtime::Launch& launch) {
  const plan::Task& t = plan_.tasks(static_cast<int>(launch.task));
  const int device = t.device();
  ++acts_launched_;
  memory_.Launched(launch, queue_.now());
  if (graph_) graph_->Launched(launch);
  if (t.kind() == plan::COLLECTIVE || t.kind() == plan::SEND || t.kind() == plan::RECV) {
    comm_.Launch(t, launch.piece);
    return;
  }
  const int64_t gradient_bytes = comm_.ReplicaGradientBytes(t);
  if (waiting_[device].empty() && gradient_bytes == 0) return Place(t);
  waiting_[device].push_back({t.id(), gradient_bytes == 0});
  if (gradient_bytes > 0) SyncGradient(t, gradient_bytes);
  Drain(device);
}

// The comm system's word that `task`'s operation ran over [start, end]: its act is done.
void ActorDriver::Communicated(int64_t task, Nanos start, Nanos end) {
  comm_spans_[plan_.tasks(static_cast<int>(task)).device()].push_back({start, end});
  Trace(task, start, end, 1);
  Finish(task, end);
}

// The gradient all-reduce over the replicas, on the communication stream; when it ends the
// waiting update may take the compute stream.
void ActorDriver::SyncGradient(const plan::Task& t, int64_t bytes) {
  const int64_t task = t.id();
  const int device = t.device();
  comm_.SyncGradient(t, bytes, [this, task, device](Nanos start, Nanos end) {
    comm_spans_[device].push_back({start, end});
    Trace(task, start, end, 1);
    for (Waiting& w : waiting_[device]) w.ready |= w.task == task;
    Drain(device);
  });
}

// Compute acts wait behind one waiting for its gradient's all-reduce, in launch order, as on a
// device thread.
void ActorDriver::Drain(int device) {
  std::deque<Waiting>& waiting = waiting_[device];
  while (!waiting.empty() && waiting.front().ready) {
    const int64_t task = waiting.front().task;
    waiting.pop_front();
    Place(plan_.tasks(static_cast<int>(task)));
  }
}

// Places a compute-stream act on its device from now (after the device's earlier acts).
void ActorDriver::Place(const plan::Task& t) {
  const int device = t.device();
  if (cores_ || gpus_) {
    acts_[device].push_back(t.id());
    if (acts_[device].size() == 1) RunOnCores(device);
    return;
  }
  const Nanos start = std::max(queue_.now(), device_free_[device]);
  const Nanos end = start + ToNanos(timing_.ActSeconds(t, 0));
  device_free_[device] = end;
  CountFlops(t);
  EndAct(t, start, end);
}

// The model's flops (MFU's), recomputation left out.
void ActorDriver::CountFlops(const plan::Task& t) {
  if (t.kind() == plan::COMPUTE && !t.recomputes()) flops_[t.device()] += t.flops();
}

// A compute-stream act of `t` over [start, end]: its span, its trace, its Done at `end`.
void ActorDriver::EndAct(const plan::Task& t, Nanos start, Nanos end) {
  if (end > start) compute_spans_[t.device()].push_back({start, end});
  Trace(t.id(), start, end, 0);
  Finish(t.id(), end);
}

// On a CPU host: runs the device's first queued act from now, its thread sharing the node's
// cores with the others; where logical devices share a GPU, its stream sharing the GPU; then
// the next.
void ActorDriver::RunOnCores(int device) {
  const plan::Task& t = plan_.tasks(static_cast<int>(acts_[device].front()));
  const Nanos start = queue_.now();
  CountFlops(t);
  const double seconds = timing_.ActSeconds(t, Contention(device));
  const auto next = [this, device, start] {
    EndAct(plan_.tasks(static_cast<int>(acts_[device].front())), start, queue_.now());
    acts_[device].pop_front();
    if (!acts_[device].empty()) RunOnCores(device);
  };
  if (cores_) return cores_->Run(NodeOf(device), device, seconds, next);
  // On a shared GPU the launch is the logical device's own host thread's; only the kernel
  // shares the GPU with the other logical devices' streams.
  const double launch = std::min(seconds, topology_.spec().device().launch_overhead_s());
  queue_.Schedule(start + ToNanos(launch), [this, device, seconds, launch, next] {
    gpus_->Run(cluster_device_[device], device, seconds - launch, next);
  });
}

// The share of its time work `device` starts now runs with every core of its CPU host busy,
// contending for caches and memory bandwidth (0: the calibrated times alone apply, 1: the
// contended ones; CoreSharing::Contention).
double ActorDriver::Contention(int device) const {
  return cores_ ? cores_->Contention(NodeOf(device)) : 0;
}

void ActorDriver::Trace(int64_t task, Nanos start, Nanos end, int stream) {
  if (options_.trace) spans_.push_back({task, stream, start, end});
  if (graph_) graph_->Timed(task, start, end);
}

SimResult ActorDriver::Report() const {
  SimResult result;
  result.events = queue_.executed();
  result.finished = true;
  for (const auto& actor : actors_) {
    if (actor->finished()) continue;
    result.finished = false;
    result.deadlock_report += actor->WaitingOn() + "\n";
  }
  const Nanos total = queue_.now();
  result.total_s = static_cast<double>(total) * 1e-9;
  result.step_s = result.total_s / static_cast<double>(std::max<int64_t>(1, options_.steps));
  double flops = 0;
  for (int d = 0; d < plan_.devices_size(); ++d) {
    result.devices.push_back(ReportDevice(d, result.total_s));
    flops += result.devices.back().flops;
  }
  // A folded Plan's other copies did what copy 0 did (plan_fold.h): their devices report alike.
  const plan::DeviceFold fold = plan::DeviceFold::Of(plan_);
  for (int c = 1; c < fold.copies; ++c) {
    for (int d = 0; d < plan_.devices_size(); ++d) {
      DeviceReport image = result.devices[d];
      image.cluster_device = static_cast<int>(fold.Image(image.cluster_device, c));
      image.name = DeviceName(topology_.spec(), fold.Image(plan_.devices(d).index(), c));
      result.devices.push_back(std::move(image));
      flops += result.devices.back().flops;
    }
  }
  if (fold.folded()) {
    std::stable_sort(result.devices.begin(), result.devices.end(),
                     [](const DeviceReport& a, const DeviceReport& b) {
                       return a.cluster_device < b.cluster_device;
                     });
  }
  result.flops_per_step = flops / static_cast<double>(std::max<int64_t>(1, options_.steps)) *
                          std::max(1, options_.data_parallel_replicas);
  if (total > 0 && !result.devices.empty()) {
    // Of the physical devices: logical devices sharing one count once.
    std::set<int> physical;
    for (const DeviceReport& d : result.devices) physical.insert(d.cluster_device);
    result.mfu = flops / (result.total_s * static_cast<double>(physical.size()) *
                          topology_.spec().device().peak_flops());
  }
  if (options_.trace) {
    result.trace = {spans_, memory_.samples(), comm_.LinkSamples()};
  }
  return result;
}

// Plan device `d`'s figures over a run of `total_s` seconds.
DeviceReport ActorDriver::ReportDevice(int d, double total_s) const {
  DeviceReport r;
  r.plan_device = d;
  r.cluster_device = cluster_device_[d];
  r.name = gpus_ ? DeviceName(topology_.spec(), r.cluster_device) + " (logical " +
                       std::to_string(plan_.devices(d).index()) + ")"
                 : DeviceName(topology_.spec(), plan_.devices(d).index());
  for (const auto& [begin, end] : compute_spans_[d])
    r.busy_s += static_cast<double>(end - begin) * 1e-9;
  r.exposed_comm_s = UncoveredSeconds(comm_spans_[d], compute_spans_[d]);
  r.bubble_s = std::max(0.0, total_s - r.busy_s - r.exposed_comm_s);
  r.flops = flops_[d];
  for (const plan::MemoryPlan& m : plan_.memory()) {
    if (m.device() != d) continue;
    r.peak_bytes = m.peak_bytes();
    r.arena_bytes = m.arena_bytes();
  }
  r.live_peak_bytes = memory_.peak(d);
  // Logical devices sharing a GPU hold their arenas in its one memory.
  int64_t held = 0;
  for (const plan::MemoryPlan& m : plan_.memory()) {
    held += cluster_device_[m.device()] == r.cluster_device ? m.arena_bytes() : 0;
  }
  r.out_of_memory = held > UsableMemoryBytes(topology_.spec());
  const PortTraffic traffic = comm_.Traffic(d);  // what its outgoing ports carried
  r.intra_bytes = timing_.intra_bytes(d) + traffic.intra_bytes;
  r.inter_bytes = timing_.inter_bytes(d) + traffic.inter_bytes;
  r.intra_busy_s = static_cast<double>(traffic.intra_busy) * 1e-9;
  r.inter_busy_s = static_cast<double>(traffic.inter_busy) * 1e-9;
  if (total_s > 0) {
    const ClusterSpec& spec = topology_.spec();
    r.intra_utilisation = r.intra_bytes / (total_s * spec.intra_node().bandwidth());
    r.inter_utilisation = r.inter_bytes / (total_s * spec.inter_node().bandwidth());
  }
  return r;
}

}  // namespace twinflow::sim
