// The comm system and its collective layer on a fake network: they reach the network only
// through NetworkApi, a transfer is one Send over its path, a collective starts when its last
// member arrived and ends for all of them at once, and a SEND and its RECV are met by tag.
#include "simulator/comm_system.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "simulator/act_timing.h"
#include "simulator/comm_runner.h"
#include "simulator/network/network_api.h"
#include "simulator/network/ports.h"
#include "tests/unit/hand_built_plan.h"

namespace twinflow::sim {
namespace {

using runtime::hand_plan::PlanBuilder;

// A Send takes one nanosecond per byte of its largest flow, then its latency; every Send is
// kept.
class FakeNetwork final : public NetworkApi {
 public:
  Nanos Now() const override { return queue.now(); }
  void Schedule(Nanos delay, Callback callback) override {
    queue.Schedule(queue.now() + delay, std::move(callback));
  }
  void Send(const std::vector<FlowSpec>& flows, Nanos latency, Callback done) override {
    sent.push_back(flows);
    double most = 0;
    for (const FlowSpec& f : flows) most = std::max(most, f.bytes);
    queue.Schedule(queue.now() + static_cast<Nanos>(most) + latency, std::move(done));
  }
  double BytesCarried(int) const override { return 0; }
  Nanos BusyTime(int) const override { return 0; }
  const std::vector<LinkLoad>& Loads() const override { return loads; }

  void RunAll() {
    while (queue.RunNext()) {
    }
  }

  EventQueue queue;
  std::vector<std::vector<FlowSpec>> sent;
  std::vector<LinkLoad> loads;
};

// One node of `devices` with 1 µs links.
Topology OneNode(int devices) {
  return Topology(ParseClusterSpec(
      "name: 'test' nodes: 1 devices_per_node: " + std::to_string(devices) +
          " device { name: 'd' peak_flops: 1e12 memory_bandwidth: 1e12 memory_bytes: 1000000000"
          " launch_overhead_s: 0 flops_efficiency: 1 memory_efficiency: 1 }"
          " intra_node { bandwidth: 1e9 latency_s: 1e-6 efficiency: 1 }"
          " inter_node { bandwidth: 1e9 latency_s: 1e-6 efficiency: 1 }",
      "test cluster"));
}

struct Finish {
  int64_t task;
  Nanos start, end;
};

// A comm system on one node of `devices` (cluster device d is plan device d) and a fake
// network, recording what finished. Lifetime: keeps `plan` by reference; it must outlive this.
class Harness {
 public:
  Harness(const plan::Plan& plan, int devices)
      : topology_(OneNode(devices)),
        cluster_device_(Identity(devices)),
        timing_(plan, topology_, cluster_device_),
        comm_(plan, topology_, cluster_device_, network_, timing_, nullptr, nullptr, 1,
              [this](int64_t task, Nanos start, Nanos end) {
                finished_.push_back({task, start, end});
              }) {}
  Harness(const Harness&) = delete;  // the comm system keeps references to the members
  std::tuple<FakeNetwork&, std::vector<Finish>&, CommSystem&> parts() {
    return {network_, finished_, comm_};
  }

 private:
  static std::vector<int> Identity(int devices) {
    std::vector<int> ids(devices);
    for (int d = 0; d < devices; ++d) ids[d] = d;
    return ids;
  }

  const Topology topology_;
  const std::vector<int> cluster_device_;
  FakeNetwork network_;
  const ActTiming timing_;
  std::vector<Finish> finished_;
  CommSystem comm_;
};

TEST(CommRunner, ATransferIsOneSendOverItsPath) {
  FakeNetwork network;
  const Topology topology = OneNode(2);
  CommRunner runner(network, topology);
  Nanos done_at = -1;
  runner.Run(runner.Transfer(0, 1, 1000), 0, [&] { done_at = network.Now(); });
  network.RunAll();
  ASSERT_EQ(network.sent.size(), 1u);
  ASSERT_EQ(network.sent[0].size(), 1u);
  EXPECT_EQ(network.sent[0][0].links,
            (std::vector<int>{LinkId(0, Port::kIntraOut), LinkId(1, Port::kIntraIn)}));
  EXPECT_DOUBLE_EQ(network.sent[0][0].bytes, 1000);
  EXPECT_EQ(done_at, 1000 + 1000);  // the bytes, then the link's latency
}

TEST(CommSystem, ACollectiveStartsWhenItsLastMemberArrives) {
  const int p = 3;
  PlanBuilder b(p);
  std::vector<int64_t> members;
  for (int d = 0; d < p; ++d) {
    const int64_t src = b.Task(plan::SOURCE, d, "x@" + std::to_string(d));
    members.push_back(b.Task(plan::COLLECTIVE, d, "all_reduce@" + std::to_string(d)));
    b.Regst(src, {members.back()}, Shape{300});
    b.task(members.back()).mutable_collective()->set_kind(plan::ALL_REDUCE);
    b.task(members.back()).mutable_collective()->set_member(d);
  }
  plan::Plan plan = b.Build();
  plan::CommGroup* group = plan.add_groups();
  for (int d = 0; d < p; ++d) group->add_devices(d);
  Harness h(plan, p);
  auto [network, finished, comm] = h.parts();
  comm.Launch(plan.tasks(static_cast<int>(members[0])), 0);
  comm.Launch(plan.tasks(static_cast<int>(members[1])), 0);
  network.RunAll();
  EXPECT_TRUE(network.sent.empty());  // two of three members: nothing moves yet
  comm.Launch(plan.tasks(static_cast<int>(members[2])), 0);
  network.RunAll();
  EXPECT_FALSE(network.sent.empty());
  ASSERT_EQ(finished.size(), 3u);
  for (const Finish& f : finished) {
    EXPECT_EQ(f.start, 0);
    EXPECT_EQ(f.end, network.Now());
    EXPECT_GT(f.end, 0);
  }
}

TEST(CommSystem, ASendAndItsRecvMeetByTag) {
  PlanBuilder b(2);
  const int64_t send = b.Task(plan::SEND, 0, "send");
  const int64_t recv = b.Task(plan::RECV, 1, "recv");
  for (int64_t t : {send, recv}) {
    b.task(t).set_tag(7);
    b.task(t).set_bytes_moved(500);
  }
  b.task(send).set_peer(1);
  b.task(recv).set_peer(0);
  const plan::Plan plan = b.Build();
  Harness h(plan, 2);
  auto [network, finished, comm] = h.parts();
  comm.Launch(plan.tasks(static_cast<int>(recv)), 0);
  EXPECT_TRUE(network.sent.empty());
  comm.Launch(plan.tasks(static_cast<int>(send)), 0);
  network.RunAll();
  ASSERT_EQ(network.sent.size(), 1u);
  EXPECT_EQ(network.sent[0][0].links,
            (std::vector<int>{LinkId(0, Port::kIntraOut), LinkId(1, Port::kIntraIn)}));
  ASSERT_EQ(finished.size(), 2u);
  EXPECT_EQ(finished[0].task, recv);  // in the order they arrived
  EXPECT_EQ(finished[1].task, send);
  EXPECT_EQ(finished[0].end, 500 + 1000);
}

}  // namespace
}  // namespace twinflow::sim
