#include "simulator/comm_system.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/core/collective_kind.h"
#include "engine/plan/comm_bytes.h"
#include "engine/plan/memory_overlaps.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_fold.h"
#include "simulator/network/ports.h"
#include "simulator/shared_devices.h"

namespace twinflow::sim {
namespace {

// The node of each rank (rank -> the node of its devices).
std::vector<int> NodeOfRank(const plan::Plan& plan, const Topology& topology,
                            const std::vector<int>& cluster_device) {
  std::vector<int> node_of_rank;
  for (int d = 0; d < plan.devices_size(); ++d) {
    const int rank = plan.devices(d).rank();
    if (rank >= static_cast<int>(node_of_rank.size())) node_of_rank.resize(rank + 1, 0);
    node_of_rank[rank] = topology.NodeOf(cluster_device[d]);
  }
  return node_of_rank;
}

}  // namespace

int CoreThreads(const plan::Plan& plan) {
  int ranks = 0;
  for (const plan::Device& d : plan.devices()) ranks = std::max(ranks, d.rank() + 1);
  return 2 * plan.devices_size() + ranks;
}

CommSystem::CommSystem(const plan::Plan& plan, const Topology& topology,
                       std::vector<int> cluster_device, NetworkApi& network,
                       const ActTiming& timing, CoreSharing* cores, CoreSharing* gpus, int replicas,
                       Finished finished)
    : plan_(plan),
      fold_(plan::DeviceFold::Of(plan)),
      topology_(topology),
      cluster_device_(std::move(cluster_device)),
      network_(network),
      timing_(timing),
      cores_(cores),
      gpus_(gpus),
      replicas_(replicas),
      finished_(std::move(finished)),
      runner_(network, topology) {
  if (cores_) {
    polling_ = std::make_unique<CommPolling>(*cores_, NodeOfRank(plan, topology, cluster_device_),
                                             2 * plan.devices_size());
  }
}

int64_t CommSystem::RegstBytes(int64_t regst) const {
  return plan_.regsts(static_cast<int>(regst)).bytes_per_slot();
}

void CommSystem::Launch(const plan::Task& t, int64_t piece) {
  if (t.kind() == plan::COLLECTIVE) {
    Meet(t, piece);
  } else {
    Pair(t, piece);
  }
}

void CommSystem::Meet(const plan::Task& t, int64_t piece) {
  const auto key = std::make_tuple(t.collective().group(), t.issue_order(), piece);
  std::vector<int64_t>& arrived = collectives_[key];
  arrived.push_back(t.id());
  const bool spans_ranks = SpansRanks(plan_, t);
  if (polling_ && spans_ranks && LastOfItsRank(plan_, arrived)) {
    polling_->Post(plan_.devices(t.device()).rank());
  }
  const plan::CommGroup& group = plan_.groups(static_cast<int>(t.collective().group()));
  if (static_cast<int>(arrived.size()) < group.devices_size()) return;
  std::vector<int> devices;
  for (int c = 0; c < (group.spans_copies() ? fold_.copies : 1); ++c) {
    for (int32_t d : group.devices()) {
      devices.push_back(static_cast<int>(fold_.Image(cluster_device_[d], c)));
    }
  }
  // An all_gather's output, any other collective's input (a bucket's inputs summed).
  const int64_t bytes = plan::CommBytes(plan_, t);
  // The simulator's one reading of the kind (validated with the Plan).
  const CollectiveKind kind = plan::FromProto(t.collective().kind(), t.name());
  if (gpus_ && std::count(devices.begin(), devices.end(), devices[0]) ==
                   static_cast<std::ptrdiff_t>(devices.size())) {
    InMemory(kind, bytes, t.collective().in_place(), devices[0], std::move(arrived));
    collectives_.erase(key);
    return;
  }
  std::vector<int> members;
  for (int64_t member : arrived) members.push_back(plan_.tasks(static_cast<int>(member)).device());
  // A group spanning a folded Plan's copies runs every copy's flows on their own links: by the
  // symmetry the other copies' members arrive when copy 0's do (sim_executor.h).
  const PlanPtr collective = runner_.Collective(t.collective().group(), kind, devices, bytes);
  // the MPI transport packs all but all_reduce (a bucket too: the chain takes a large one where
  // it lies, and a small one's pack is short)
  const bool staged = kind != CollectiveKind::kAllReduce;
  Communicate(collective, members, std::move(arrived), CollectiveReduces(kind),
              spans_ranks && staged ? bytes : 0);
  collectives_.erase(key);
}

void CommSystem::Pair(const plan::Task& t, int64_t piece) {
  if (polling_ && SpansRanks(plan_, t)) polling_->Post(plan_.devices(t.device()).rank());
  const auto key = std::make_pair(t.tag(), piece);
  std::vector<int64_t>& arrived = pairs_[key];
  arrived.push_back(t.id());
  if (arrived.size() < 2) return;
  const plan::Task& send = plan_.tasks(static_cast<int>(
      plan_.tasks(static_cast<int>(arrived[0])).kind() == plan::SEND ? arrived[0] : arrived[1]));
  const PlanPtr transfer = runner_.Transfer(cluster_device_[send.device()],
                                            cluster_device_[send.peer()], send.bytes_moved());
  Communicate(transfer, {send.device(), static_cast<int>(send.peer())}, std::move(arrived), false,
              send.bytes_moved());
  pairs_.erase(key);
}

// Runs `plan` for the communication tasks `tasks` (on `devices`, plan devices) from now; when
// it ends they all finish. On a CPU host moving bytes is the cores' work too: each device's
// comm thread copies what it sends and receives (CommCopiedBytes; `reduces`: an all-reduce or
// reduce-scatter) and, for an op between ranks, 1.5 times the op's `staged` bytes besides (the
// transport packs them into a fresh buffer, or out of one), sharing the node's cores; the
// tasks finish when the links and the copies are done.
void CommSystem::Communicate(const PlanPtr& plan, const std::vector<int>& devices,
                             std::vector<int64_t> tasks, bool reduces, int64_t staged) {
  const Nanos now = network_.Now();
  // Between ranks the copies are the polling comm thread's: it copies instead of polling.
  const bool polls = polling_ && SpansRanks(plan_, plan_.tasks(static_cast<int>(tasks[0])));
  auto pending = std::make_shared<int>(1 + (cores_ ? static_cast<int>(devices.size()) : 0));
  auto done = [this, now, pending, tasks = std::move(tasks)] {
    if (--*pending > 0) return;
    const Nanos end = network_.Now();
    if (polling_) EndPolling(tasks);
    for (int64_t task : tasks) finished_(task, now, end);
  };
  if (cores_) {
    for (int d : devices) {
      const double copied = CommCopiedBytes(*plan, cluster_device_[d], reduces) + 1.5 * staged;
      const int rank = plan_.devices(d).rank();
      if (polls) polling_->BeginCopy(rank);
      const double contention = cores_->Contention(NodeOf(d));
      cores_->Run(NodeOf(d), plan_.devices_size() + d,
                  timing_.MemorySeconds(2 * copied, contention), [this, polls, rank, done] {
                    if (polls) polling_->EndCopy(rank);
                    done();
                  });
    }
  }
  runner_.Run(plan, now, done);
}

// A collective among logical devices sharing GPU `gpu`: the runtime's copies and reductions
// through its memory, kernels on the compute stream of the member that arrived last
// (shared_devices.h), sharing the GPU with the other streams on it.
void CommSystem::InMemory(CollectiveKind kind, int64_t bytes, bool in_place, int gpu,
                          std::vector<int64_t> tasks) {
  const Nanos now = network_.Now();
  const InMemoryCollective cost =
      InMemoryCollectiveCost(kind, static_cast<int64_t>(tasks.size()), bytes, in_place);
  // A bucket's tensors are reduced one after another: its moves for each.
  const auto tensors = static_cast<int64_t>(
      std::max<size_t>(1, plan::DataPairs(plan_, plan_.tasks(static_cast<int>(tasks[0]))).size()));
  // The host thread launches the moves one after another while the GPU runs them: the
  // kernels' work starts after the first launch and the whole ends no sooner than the last.
  const double launch = topology_.spec().device().launch_overhead_s();
  const auto nanos = [](double seconds) { return static_cast<Nanos>(std::llround(seconds * 1e9)); };
  // On the last member's compute stream: a flow beside the act that stream may be running, so
  // the two take as long as one after the other (the stream's share of the GPU is one).
  const int last = plan_.tasks(static_cast<int>(tasks.back())).device();
  auto pending = std::make_shared<int>(2);
  auto done = [this, now, pending, tasks = std::move(tasks)] {
    if (--*pending > 0) return;
    for (int64_t task : tasks) finished_(task, now, network_.Now());
  };
  const double work = timing_.MemorySeconds(cost.bytes, 0);
  network_.Schedule(nanos(launch),
                    [this, gpu, last, work, done] { gpus_->Run(gpu, last, work, done); });
  network_.Schedule(nanos(launch * static_cast<double>(cost.moves * tensors)), done);
}

// The ranks of `tasks` (one operation) whose comm threads polled for it stop counting it.
void CommSystem::EndPolling(const std::vector<int64_t>& tasks) {
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

int64_t CommSystem::ReplicaGradientBytes(const plan::Task& t) const {
  if (replicas_ <= 1 || !t.optimizer_update() || t.consumed_regsts_size() < 2) return 0;
  return RegstBytes(t.consumed_regsts(1));
}

void CommSystem::SyncGradient(const plan::Task& t, int64_t bytes, Synced synced) {
  const Nanos now = network_.Now();
  const PlanPtr sync = runner_.ReplicaAllReduce(cluster_device_[t.device()], replicas_, bytes);
  runner_.Run(sync, now, [this, now, synced = std::move(synced)] { synced(now, network_.Now()); });
}

PortTraffic CommSystem::Traffic(int device) const {
  const int c = cluster_device_[device];
  PortTraffic traffic;
  traffic.intra_bytes = network_.BytesCarried(LinkId(c, Port::kIntraOut));
  const int nic = NicLink(topology_, c, Port::kNicOut);  // shared with its NIC's other devices
  traffic.inter_bytes = network_.BytesCarried(nic);
  traffic.intra_busy = network_.BusyTime(LinkId(c, Port::kIntraOut));
  traffic.inter_busy = network_.BusyTime(nic);
  return traffic;
}

std::vector<plan::LinkSample> CommSystem::LinkSamples() const {
  return runner_.LinkSamples(cluster_device_);
}

}  // namespace twinflow::sim
