#include "simulator/comm_runner.h"

#include <cmath>
#include <map>

#include "simulator/network/ports.h"

namespace twinflow::sim {

CommRunner::CommRunner(NetworkApi& network, const Topology& topology)
    : network_(network), topology_(topology) {}

PlanPtr CommRunner::Collective(int64_t group, CollectiveKind kind, const std::vector<int>& devices,
                               int64_t bytes) {
  PlanPtr& plan = collectives_[{group, kind, bytes}];
  if (!plan)
    plan = std::make_shared<CollectivePlan>(PlanCollective(kind, devices, bytes, topology_));
  return plan;
}

PlanPtr CommRunner::Transfer(int from, int to, int64_t bytes) const {
  auto plan = std::make_shared<CollectivePlan>();
  if (from == to || bytes <= 0) return plan;
  const Link& link = *topology_.LinkBetween(from, to);
  plan->algorithm = "transfer";
  plan->phases.push_back(
      {{{PathLinks(topology_, from, to), static_cast<double>(bytes)}}, link.latency_s()});
  plan->idle_s = IdleSeconds(plan->phases, topology_);
  return plan;
}

PlanPtr CommRunner::ReplicaAllReduce(int device, int replicas, int64_t bytes) {
  PlanPtr& plan = replicas_[{device, bytes}];
  if (!plan) {
    plan =
        std::make_shared<CollectivePlan>(ReplicaAllReducePlan(device, replicas, bytes, topology_));
  }
  return plan;
}

std::vector<plan::LinkSample> CommRunner::LinkSamples(
    const std::vector<int>& cluster_device) const {
  static const char* const kNames[kPortsPerDevice] = {"intra out", "intra in", "nic out", "nic in"};
  std::map<int, int> plan_device;  // cluster device -> plan device
  for (size_t d = 0; d < cluster_device.size(); ++d) {
    plan_device[cluster_device[d]] = static_cast<int>(d);
  }
  std::vector<plan::LinkSample> samples;
  for (const LinkLoad& l : network_.Loads()) {
    const auto it = plan_device.find(l.link / kPortsPerDevice);
    if (it == plan_device.end()) continue;
    samples.push_back({it->second, kNames[l.link % kPortsPerDevice], l.at, l.load});
  }
  return samples;
}

void CommRunner::Run(PlanPtr plan, Nanos start, std::function<void()> done) {
  if (start > network_.Now()) {  // e.g. waiting for a core on a CPU host
    network_.Schedule(start - network_.Now(),
                      [this, plan = std::move(plan), done = std::move(done)]() mutable {
                        RunPhase(std::move(plan), 0, std::move(done));
                      });
    return;
  }
  RunPhase(std::move(plan), 0, std::move(done));
}

void CommRunner::RunPhase(PlanPtr plan, size_t phase, std::function<void()> done) {
  if (phase == plan->phases.size()) {
    done();
    return;
  }
  const CollectivePhase& p = plan->phases[phase];
  const Nanos latency = static_cast<Nanos>(std::llround(p.latency_s * 1e9));
  network_.Send(p.flows, latency, [this, plan, phase, done = std::move(done)]() mutable {
    RunPhase(std::move(plan), phase + 1, std::move(done));
  });
}

}  // namespace twinflow::sim
