#include "simulator/sim_executor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <variant>

#include "engine/core/collective_kind.h"
#include "engine/core/error.h"
#include "engine/plan/chrome_trace.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_rates.h"
#include "engine/runtime/actor.h"
#include "simulator/act_timing.h"
#include "simulator/comm_polling.h"
#include "simulator/comm_runner.h"
#include "simulator/core_sharing.h"
#include "simulator/des/event_queue.h"
#include "simulator/live_memory.h"
#include "simulator/network/ports.h"

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

// The cluster device of each plan device.
std::vector<int> ClusterDevices(const plan::Plan& plan, const Topology& topology) {
  std::vector<int> cluster_device;
  for (const plan::Device& d : plan.devices()) {
    if (d.index() >= topology.devices()) {
      throw InvalidArgumentError("the Plan uses device " + plan::EnumName(d.type()) + ":" +
                                 std::to_string(d.index()) + " but the cluster has " +
                                 std::to_string(topology.devices()) + " devices");
    }
    cluster_device.push_back(static_cast<int>(d.index()));
  }
  return cluster_device;
}

// Lifetime: keeps `plan` and `topology` by reference for the one Simulate call that makes it.
class Simulation {
 public:
  Simulation(const plan::Plan& plan, const Topology& topology, const SimOptions& options)
      : plan_(plan),
        topology_(topology),
        options_(options),
        comm_(queue_, topology),
        cluster_device_(ClusterDevices(plan, topology)),
        timing_(plan, topology, cluster_device_),
        memory_(plan, options.trace) {
    device_free_.assign(plan.devices_size(), 0);
    waiting_.resize(plan.devices_size());
    if (options.trace) comm_.RecordLoads();
    const ClusterSpec& spec = topology.spec();
    if (spec.cores_per_node() > 0) {  // threads: the devices', their comm threads, the pollers
      std::vector<int> node_of_rank;
      for (int d = 0; d < plan.devices_size(); ++d) {
        const int rank = plan.devices(d).rank();
        if (rank >= static_cast<int>(node_of_rank.size())) node_of_rank.resize(rank + 1, 0);
        node_of_rank[rank] = NodeOf(d);
      }
      cores_ = std::make_unique<CoreSharing>(queue_, spec.nodes(), spec.cores_per_node(),
                                             2 * plan.devices_size() + node_of_rank.size());
      polling_ = std::make_unique<CommPolling>(*cores_, node_of_rank, 2 * plan.devices_size());
      acts_.resize(plan.devices_size());
    }
    compute_spans_.resize(plan.devices_size());
    comm_spans_.resize(plan.devices_size());
    flops_.assign(plan.devices_size(), 0);
    const std::vector<int64_t> acts = plan::ActsPerStep(plan);
    const int64_t per_step = std::max<int64_t>(1, plan.pieces_per_step());
    for (const plan::Task& t : plan.tasks()) {
      const int64_t pieces = t.kind() == plan::SOURCE     ? options.steps * per_step
                             : t.kind() == plan::VARIABLE ? options.steps
                             : t.kind() == plan::RECV     ? options.steps * acts[t.id()]
                                                          : 0;
      actors_.push_back(std::make_unique<runtime::Actor>(plan, t.id(), pieces));
    }
  }

  SimResult Run() {
    for (auto& actor : actors_) {
      runtime::Outbox out;
      actor->Start(out);
      Process(out);
    }
    const int64_t every = std::max<int64_t>(1, options_.progress_every);
    while (queue_.RunNext()) {
      if (options_.progress && queue_.executed() % every == 0) {
        options_.progress(queue_.executed(), static_cast<double>(queue_.now()) * 1e-9);
      }
    }
    return Report();
  }

 private:
  void Process(runtime::Outbox& out) {
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

  void Finish(int64_t task, Nanos at) {
    queue_.Schedule(at, [this, task] {
      runtime::Outbox next;
      actors_[task]->Done(next);
      Process(next);
    });
  }

  int64_t RegstBytes(int64_t regst) const {
    return plan_.regsts(static_cast<int>(regst)).bytes_per_slot();
  }

  void Launch(const runtime::Launch& launch) {
    const plan::Task& t = plan_.tasks(static_cast<int>(launch.task));
    const int device = t.device();
    memory_.Launched(launch, queue_.now());
    switch (t.kind()) {
      case plan::COLLECTIVE: {
        const auto key = std::make_tuple(t.collective().group(), t.issue_order(), launch.piece);
        std::vector<int64_t>& arrived = collectives_[key];
        arrived.push_back(t.id());
        const bool spans_ranks = SpansRanks(plan_, t);
        if (polling_ && spans_ranks && LastOfItsRank(plan_, arrived)) {
          polling_->Post(plan_.devices(device).rank());
        }
        const plan::CommGroup& group = plan_.groups(static_cast<int>(t.collective().group()));
        if (static_cast<int>(arrived.size()) < group.devices_size()) return;
        std::vector<int> devices;
        for (int32_t d : group.devices()) devices.push_back(cluster_device_[d]);
        int64_t bytes = 0;
        for (int64_t r : t.consumed_regsts()) bytes = std::max(bytes, RegstBytes(r));
        // The executor's one reading of the kind (validated with the Plan).
        const CollectiveKind kind = plan::FromProto(t.collective().kind(), t.name());
        if (kind == CollectiveKind::kAllGather) {
          for (int64_t r : t.produced_regsts()) bytes = std::max(bytes, RegstBytes(r));
        }
        std::vector<int> members;
        for (int64_t member : arrived)
          members.push_back(plan_.tasks(static_cast<int>(member)).device());
        const PlanPtr collective = comm_.Collective(t.collective().group(), kind, devices, bytes);
        // the MPI transport packs all but all_reduce
        const bool staged = kind != CollectiveKind::kAllReduce;
        Communicate(collective, members, std::move(arrived), CollectiveReduces(kind),
                    spans_ranks && staged ? bytes : 0);
        collectives_.erase(key);
        return;
      }
      case plan::SEND:
      case plan::RECV: {
        if (polling_ && SpansRanks(plan_, t)) polling_->Post(plan_.devices(device).rank());
        const auto key = std::make_pair(t.tag(), launch.piece);
        std::vector<int64_t>& arrived = pairs_[key];
        arrived.push_back(t.id());
        if (arrived.size() < 2) return;
        const plan::Task& send = plan_.tasks(static_cast<int>(
            plan_.tasks(static_cast<int>(arrived[0])).kind() == plan::SEND ? arrived[0]
                                                                           : arrived[1]));
        const PlanPtr transfer = comm_.Transfer(cluster_device_[send.device()],
                                                cluster_device_[send.peer()], send.bytes_moved());
        Communicate(transfer, {send.device(), static_cast<int>(send.peer())}, std::move(arrived),
                    false, send.bytes_moved());
        pairs_.erase(key);
        return;
      }
      default: {
        const int64_t gradient_bytes = ReplicaGradientBytes(t);
        if (waiting_[device].empty() && gradient_bytes == 0) return Place(t);
        waiting_[device].push_back({t.id(), gradient_bytes == 0});
        if (gradient_bytes > 0) SyncGradient(t, gradient_bytes);
        Drain(device);
      }
    }
  }

  // Runs `plan` for the communication tasks `tasks` (on `devices`, plan devices) from now;
  // when it ends they all finish. On a CPU host moving bytes is the cores' work too: each
  // device's comm thread copies what it sends and receives (CommCopiedBytes; `reduces`: an
  // all-reduce or reduce-scatter) and, for an op between ranks, twice the op's `staged` bytes
  // (the transport packs them into a fresh buffer, or out of one), sharing the node's cores;
  // the tasks finish when the links and the copies are done.
  void Communicate(const PlanPtr& plan, const std::vector<int>& devices, std::vector<int64_t> tasks,
                   bool reduces = false, int64_t staged = 0) {
    const Nanos now = queue_.now();
    // Between ranks the copies are the polling comm thread's: it copies instead of polling.
    const bool polls = polling_ && SpansRanks(plan_, plan_.tasks(static_cast<int>(tasks[0])));
    auto pending = std::make_shared<int>(1 + (cores_ ? static_cast<int>(devices.size()) : 0));
    auto done = [this, now, pending, tasks = std::move(tasks)] {
      if (--*pending > 0) return;
      const Nanos end = queue_.now();
      if (polling_) EndPolling(tasks);
      for (int64_t task : tasks) {
        comm_spans_[plan_.tasks(static_cast<int>(task)).device()].push_back({now, end});
        Trace(task, now, end, 1);
        Finish(task, end);
      }
    };
    if (cores_) {
      for (int d : devices) {
        const double copied = CommCopiedBytes(*plan, cluster_device_[d], reduces) + 1.5 * staged;
        const int rank = plan_.devices(d).rank();
        if (polls) polling_->BeginCopy(rank);
        cores_->Run(NodeOf(d), plan_.devices_size() + d,
                    timing_.MemorySeconds(2 * copied, Contention(d)), [this, polls, rank, done] {
                      if (polls) polling_->EndCopy(rank);
                      done();
                    });
      }
    }
    comm_.Run(plan, now, done);
  }

  // The ranks of `tasks` (one operation) whose comm threads polled for it stop counting it.
  void EndPolling(const std::vector<int64_t>& tasks) {
    std::vector<int> ranks;
    for (int64_t task : tasks) {
      const plan::Task& t = plan_.tasks(static_cast<int>(task));
      const int rank = plan_.devices(t.device()).rank();
      if (!SpansRanks(plan_, t) || std::find(ranks.begin(), ranks.end(), rank) != ranks.end())
        continue;
      ranks.push_back(rank);
      polling_->Complete(rank);
    }
  }

  int NodeOf(int device) const { return topology_.NodeOf(cluster_device_[device]); }

  // The share of its time work `device` starts now runs with every core of its CPU host busy,
  // contending for caches and memory bandwidth (0: the calibrated times alone apply, 1: the
  // contended ones; CoreSharing::Contention).
  double Contention(int device) const { return cores_ ? cores_->Contention(NodeOf(device)) : 0; }

  // Compute acts wait behind one waiting for its gradient's all-reduce, in launch order, as
  // on a device thread.
  void Drain(int device) {
    std::deque<Waiting>& waiting = waiting_[device];
    while (!waiting.empty() && waiting.front().ready) {
      const int64_t task = waiting.front().task;
      waiting.pop_front();
      Place(plan_.tasks(static_cast<int>(task)));
    }
  }

  // Places a compute-stream act on its device from now (after the device's earlier acts).
  void Place(const plan::Task& t) {
    const int device = t.device();
    if (cores_) {
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
  void CountFlops(const plan::Task& t) {
    if (t.kind() == plan::COMPUTE && !t.recomputes()) flops_[t.device()] += t.flops();
  }

  // A compute-stream act of `t` over [start, end]: its span, its trace, its Done at `end`.
  void EndAct(const plan::Task& t, Nanos start, Nanos end) {
    if (end > start) compute_spans_[t.device()].push_back({start, end});
    Trace(t.id(), start, end, 0);
    Finish(t.id(), end);
  }

  // On a CPU host: runs the device's first queued act from now, its thread sharing the node's
  // cores with the others; then the next.
  void RunOnCores(int device) {
    const plan::Task& t = plan_.tasks(static_cast<int>(acts_[device].front()));
    const Nanos start = queue_.now();
    CountFlops(t);
    const double seconds = timing_.ActSeconds(t, Contention(device));
    cores_->Run(NodeOf(device), device, seconds, [this, device, start] {
      EndAct(plan_.tasks(static_cast<int>(acts_[device].front())), start, queue_.now());
      acts_[device].pop_front();
      if (!acts_[device].empty()) RunOnCores(device);
    });
  }

  // For an optimizer update of one of several data-parallel replicas, the bytes of its
  // gradient, which it all-reduces over the replicas first; else 0.
  int64_t ReplicaGradientBytes(const plan::Task& t) const {
    if (options_.data_parallel_replicas <= 1 || !t.optimizer_update() ||
        t.consumed_regsts_size() < 2) {
      return 0;
    }
    return RegstBytes(t.consumed_regsts(1));
  }

  // The gradient all-reduce over the replicas, on the communication stream; when it ends the
  // waiting update may take the compute stream.
  void SyncGradient(const plan::Task& t, int64_t bytes) {
    const Nanos now = queue_.now();
    const int64_t task = t.id();
    const int device = t.device();
    const PlanPtr sync =
        comm_.ReplicaAllReduce(cluster_device_[device], options_.data_parallel_replicas, bytes);
    comm_.Run(sync, now, [this, now, task, device] {
      comm_spans_[device].push_back({now, queue_.now()});
      Trace(task, now, queue_.now(), 1);
      for (Waiting& w : waiting_[device]) w.ready |= w.task == task;
      Drain(device);
    });
  }

  void Trace(int64_t task, Nanos start, Nanos end, int stream) {
    if (options_.trace) spans_.push_back({task, stream, start, end});
  }

  SimResult Report() {
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
    const DeviceModel& model = topology_.spec().device();
    double flops = 0;
    for (int d = 0; d < plan_.devices_size(); ++d) {
      DeviceReport r;
      r.plan_device = d;
      r.cluster_device = cluster_device_[d];
      r.name =
          plan::EnumName(plan_.devices(d).type()) + ":" + std::to_string(plan_.devices(d).index());
      for (const auto& [begin, end] : compute_spans_[d])
        r.busy_s += static_cast<double>(end - begin) * 1e-9;
      r.exposed_comm_s = UncoveredSeconds(comm_spans_[d], compute_spans_[d]);
      r.bubble_s = std::max(0.0, result.total_s - r.busy_s - r.exposed_comm_s);
      r.flops = flops_[d];
      for (const plan::MemoryPlan& m : plan_.memory()) {
        if (m.device() != d) continue;
        r.peak_bytes = m.peak_bytes();
        r.arena_bytes = m.arena_bytes();
      }
      r.live_peak_bytes = memory_.peak(d);
      r.out_of_memory = r.arena_bytes > model.memory_bytes();
      const LinkNetwork& links = comm_.network();  // what its outgoing ports carried
      const int c = cluster_device_[d];
      r.intra_bytes = timing_.intra_bytes(d) + links.BytesCarried(LinkId(c, Port::kIntraOut));
      r.inter_bytes = timing_.inter_bytes(d) + links.BytesCarried(LinkId(c, Port::kNicOut));
      r.intra_busy_s = static_cast<double>(links.BusyTime(LinkId(c, Port::kIntraOut))) * 1e-9;
      r.inter_busy_s = static_cast<double>(links.BusyTime(LinkId(c, Port::kNicOut))) * 1e-9;
      if (result.total_s > 0) {
        const ClusterSpec& spec = topology_.spec();
        r.intra_utilisation = r.intra_bytes / (result.total_s * spec.intra_node().bandwidth());
        r.inter_utilisation = r.inter_bytes / (result.total_s * spec.inter_node().bandwidth());
      }
      flops += r.flops;
      result.devices.push_back(r);
    }
    result.flops_per_step = flops / static_cast<double>(std::max<int64_t>(1, options_.steps)) *
                            std::max(1, options_.data_parallel_replicas);
    if (total > 0 && !result.devices.empty()) {
      result.mfu = flops / (result.total_s * static_cast<double>(result.devices.size()) *
                            model.peak_flops());
    }
    if (options_.trace) {
      result.trace_json = plan::ChromeTraceJson(plan_, spans_, "twinflow sim", memory_.samples(),
                                                comm_.LinkSamples(cluster_device_));
    }
    return result;
  }

  const plan::Plan& plan_;
  const Topology& topology_;
  SimOptions options_;
  EventQueue queue_;
  CommRunner comm_;                  // after queue_, which it uses
  std::vector<int> cluster_device_;  // by plan device
  ActTiming timing_;
  LiveMemory memory_;
  std::vector<std::unique_ptr<runtime::Actor>> actors_;
  std::vector<Nanos> device_free_;  // when each compute stream is next free
  struct Waiting {
    int64_t task = 0;
    bool ready = false;
  };
  std::vector<std::deque<Waiting>> waiting_;  // per device, behind an update awaiting its sync
  std::unique_ptr<CoreSharing> cores_;        // on a CPU host (cores_per_node set)
  std::unique_ptr<CommPolling> polling_;      // on a CPU host: the ranks' polling comm threads
  std::vector<std::deque<int64_t>> acts_;     // on a CPU host: per device, its queued acts
  std::vector<std::vector<std::pair<Nanos, Nanos>>> compute_spans_, comm_spans_;
  std::vector<double> flops_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<int64_t>> collectives_;
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> pairs_;
  std::vector<plan::TraceSpan> spans_;
};

}  // namespace

SimResult Simulate(const plan::Plan& plan, const Topology& topology, const SimOptions& options) {
  if (options.steps < 1) throw InvalidArgumentError("the simulation needs at least one step");
  return Simulation(plan, topology, options).Run();
}

}  // namespace twinflow::sim
