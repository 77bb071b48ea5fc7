// The simulator against formulas: a ring all-reduce takes 2(p-1)a + 2(p-1)/p S/B, a pipeline
// of p uniform stages and m micro-batches idles (p-1)/(m+p-1) of the time, two runs give
// byte-identical traces, a deadlocking Plan is reported with what waits, and an arena larger
// than the device's memory is flagged. Also the event queue's order, cluster spec errors, and
// a CPU host's cores shared by its threads.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/plan/plan_rates.h"
#include "engine/trace/trace_writer.h"
#include "simulator/collectives/algorithms.h"
#include "simulator/collectives/ring.h"
#include "simulator/core_sharing.h"
#include "simulator/des/event_queue.h"
#include "simulator/sim_executor.h"
#include "tests/unit/hand_built_plan.h"

namespace twinflow::sim {
namespace {

using runtime::hand_plan::PlanBuilder;

// One node of `devices`, compute at 1 TFLOP/s, memory and links fast or slow as asked.
Topology Cluster(int devices, double link_bandwidth, double link_latency) {
  return Topology(ParseClusterSpec(
      "name: 'test' nodes: 1 devices_per_node: " + std::to_string(devices) +
          " device { name: 'd' peak_flops: 1e12 memory_bandwidth: 1e18 memory_bytes: 1000000000"
          " launch_overhead_s: 0 flops_efficiency: 1 memory_efficiency: 1 }"
          " intra_node { bandwidth: " +
          std::to_string(link_bandwidth) + " latency_s: " + std::to_string(link_latency) +
          " efficiency: 1 }"
          " inter_node { bandwidth: 1e9 latency_s: 0 efficiency: 1 }",
      "test cluster"));
}

TEST(EventQueue, OrdersByTimeThenByScheduling) {
  EventQueue q;
  std::string order;
  q.Schedule(20, [&] { order += "c"; });
  q.Schedule(10, [&] { order += "a"; });
  q.Schedule(10, [&] {
    order += "b";
    q.Schedule(10, [&] { order += "d"; });  // the same time, scheduled last of the 10s
  });
  while (q.RunNext()) {
  }
  EXPECT_EQ(order, "abdc");
  EXPECT_EQ(q.now(), 20);
}

// Every one of p devices all-reduces `bytes` of f32 fed by a SOURCE, into a SINK.
plan::Plan AllReducePlan(int p, int64_t bytes) {
  const Shape shape{bytes / 4};
  PlanBuilder b(p);
  for (int d = 0; d < p; ++d) {
    const int64_t src = b.Task(plan::SOURCE, d, "x@" + std::to_string(d));
    const int64_t c = b.Task(plan::COLLECTIVE, d, "all_reduce@" + std::to_string(d));
    const int64_t sink = b.Task(plan::SINK, d, "sink@" + std::to_string(d));
    b.Regst(src, {c}, shape);
    b.Regst(c, {sink}, shape);
    b.task(c).mutable_collective()->set_kind(plan::ALL_REDUCE);
    b.task(c).mutable_collective()->set_reduce_op(plan::REDUCE_SUM);
    b.task(c).mutable_collective()->set_member(d);
  }
  plan::Plan plan = b.Build();
  plan::CommGroup* group = plan.add_groups();
  for (int d = 0; d < p; ++d) group->add_devices(d);
  return plan;
}

// Three threads on two cores each get 2/3 of a core: 1 ms of work ends at 1.5 ms; the other
// two have 1 ms of their 2 left and a core each, so they end at 2.5 ms. One thread alone gets
// one core, not two.
TEST(CoreSharing, ThreadsShareTheCoresEqually) {
  EventQueue queue;
  CoreSharing cores(queue, /*nodes=*/1, /*cores_per_node=*/2, /*threads=*/3);
  std::vector<Nanos> ends(3, -1);
  EXPECT_FALSE(cores.AllBusy(0));
  cores.Run(0, 0, 1e-3, [&] { ends[0] = queue.now(); });
  EXPECT_TRUE(cores.AllBusy(0));
  cores.Run(0, 1, 2e-3, [&] { ends[1] = queue.now(); });
  cores.Run(0, 2, 2e-3, [&] { ends[2] = queue.now(); });
  while (queue.RunNext()) {
  }
  EXPECT_NEAR(static_cast<double>(ends[0]), 1.5e6, 2);
  EXPECT_NEAR(static_cast<double>(ends[1]), 2.5e6, 2);
  EXPECT_NEAR(static_cast<double>(ends[2]), 2.5e6, 2);
  cores.Run(0, 0, 1e-3, [&] { ends[0] = queue.now(); });
  while (queue.RunNext()) {
  }
  EXPECT_NEAR(static_cast<double>(ends[0]), 3.5e6, 2);
}

// A two-device ring all-reduce of S: each device sends S and receives S (copies 2S) and
// reads what it receives once more to reduce it.
TEST(CoreSharing, CommCopiesWhatADeviceSendsAndReceives) {
  const Topology topology = Cluster(2, 1e9, 0);
  const CollectivePlan plan = PlanCollective(CollectiveKind::kAllReduce, {0, 1}, 1000, topology);
  EXPECT_DOUBLE_EQ(CommCopiedBytes(plan, 0, false), 2000);
  EXPECT_DOUBLE_EQ(CommCopiedBytes(plan, 1, true), 3000);
}

TEST(Simulator, RingAllReduceMatchesTheFormula) {
  for (int p : {2, 4, 8}) {
    const int64_t bytes = int64_t{64} << 20;
    const plan::Plan plan = AllReducePlan(p, bytes);
    const double alpha = 5e-6, bandwidth = 100e9;
    const SimResult r = Simulate(plan, Cluster(p, bandwidth, alpha), SimOptions{});
    ASSERT_TRUE(r.finished) << r.deadlock_report;
    const double want = 2 * (p - 1) * alpha + 2.0 * (p - 1) / p * bytes / bandwidth;
    EXPECT_NEAR(r.total_s, want, 0.01 * want) << "p=" << p;
    for (const DeviceReport& d : r.devices) {  // each sends 2(p-1)/p S over the fabric
      EXPECT_DOUBLE_EQ(d.intra_bytes, 2.0 * (p - 1) / p * bytes) << d.name;
      EXPECT_EQ(d.inter_bytes, 0) << d.name;
      EXPECT_NEAR(d.intra_utilisation, d.intra_bytes / (r.total_s * bandwidth), 1e-9);
    }
    EXPECT_NEAR(RingCollectiveSeconds(CollectiveKind::kAllReduce, p, bytes,
                                      Cluster(p, bandwidth, alpha).spec().intra_node()),
                want, 1e-12);
  }
}

// An all-reduce over whole nodes takes the hierarchical algorithm when it beats the ring over
// the slow inter-node links: reduce-scatter in the node, all-reduce of S/k across nodes,
// all-gather in the node; the bytes each device sends per link class follow it.
TEST(Simulator, AllReduceAcrossNodesGoesHierarchical) {
  const int nodes = 4, per_node = 4, p = nodes * per_node;
  const int64_t bytes = int64_t{32} << 20;
  const plan::Plan plan = AllReducePlan(p, bytes);
  const Topology cluster(ParseClusterSpec(
      "name: 'two-tier' nodes: 4 devices_per_node: 4"
      " device { name: 'd' peak_flops: 1e12 memory_bandwidth: 1e18 memory_bytes: 1000000000"
      " launch_overhead_s: 0 flops_efficiency: 1 memory_efficiency: 1 }"
      " intra_node { bandwidth: 400e9 latency_s: 2e-6 efficiency: 1 }"
      " inter_node { bandwidth: 40e9 latency_s: 5e-6 efficiency: 1 }",
      "two tiers"));
  const SimResult r = Simulate(plan, cluster, SimOptions{});
  ASSERT_TRUE(r.finished) << r.deadlock_report;
  const double s = static_cast<double>(bytes);
  const double hierarchical =
      2 * ((per_node - 1) * 2e-6 + (per_node - 1.0) / per_node * s / 400e9) +
      2 * (nodes - 1) * 5e-6 + 2.0 * (nodes - 1) / nodes * (s / per_node) / 40e9;
  const double ring = 2 * (p - 1) * 5e-6 + 2.0 * (p - 1) / p * s / 40e9;
  ASSERT_LT(hierarchical, ring);
  EXPECT_NEAR(r.total_s, hierarchical, 0.01 * hierarchical);
  for (const DeviceReport& d : r.devices) {
    EXPECT_DOUBLE_EQ(d.intra_bytes, 2.0 * (per_node - 1) / per_node * s) << d.name;
    EXPECT_DOUBLE_EQ(d.inter_bytes, 2.0 * (nodes - 1) / nodes * s / per_node) << d.name;
  }
}

// p stages on p devices, each a COMPUTE of `flops` per micro-batch, joined by COPYs over a link
// so fast they take no time; GPipe slots (m).
plan::Plan Pipeline(int p, int m, double flops) {
  PlanBuilder b(p, m);
  const Shape shape{4};
  int64_t previous = b.Task(plan::SOURCE, 0, "x");
  for (int s = 0; s < p; ++s) {
    if (s > 0) {
      const int64_t copy = b.Task(plan::COPY, s, "to_stage" + std::to_string(s));
      b.Regst(previous, {copy}, shape, m);
      previous = copy;
    }
    const int64_t stage = b.Task(plan::COMPUTE, s, "stage" + std::to_string(s), "relu");
    b.task(stage).set_flops(flops);
    b.Regst(previous, {stage}, shape, m);
    previous = stage;
  }
  const int64_t sink = b.Task(plan::SINK, p - 1, "y");
  b.Regst(previous, {sink}, shape, m);
  return b.Build();
}

TEST(Simulator, PipelineBubbleMatchesTheFormula) {
  for (const auto& [p, m] : std::vector<std::pair<int, int>>{{2, 4}, {4, 8}, {4, 16}, {8, 32}}) {
    const SimResult r = Simulate(Pipeline(p, m, 1e9), Cluster(p, 1e18, 0), SimOptions{});
    ASSERT_TRUE(r.finished) << r.deadlock_report;
    const double want = static_cast<double>(p - 1) / (m + p - 1);
    for (const DeviceReport& d : r.devices) {
      const double idle = 1 - d.busy_s / r.total_s;
      EXPECT_NEAR(idle, want, 0.02) << "p=" << p << " m=" << m << " " << d.name;
    }
  }
}

// Progress counts acts against a total known before the run: every task's acts per step
// times the steps; by the last event every act has launched.
TEST(Simulator, ProgressCountsTheActsOfTheWholeRun) {
  const plan::Plan plan = Pipeline(4, 8, 1e9);
  int64_t want = 0;
  for (int64_t acts : plan::ActsPerStep(plan)) want += acts * 3;
  std::vector<SimProgress> seen;
  SimOptions options;
  options.steps = 3;
  options.progress_every = 1;
  options.progress = [&](const SimProgress& p) { seen.push_back(p); };
  const SimResult r = Simulate(plan, Cluster(4, 1e10, 0), options);
  ASSERT_TRUE(r.finished);
  ASSERT_EQ(static_cast<int64_t>(seen.size()), r.events);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].total_acts, want);
    EXPECT_EQ(seen[i].events, static_cast<int64_t>(i) + 1);
    if (i > 0) EXPECT_GE(seen[i].acts, seen[i - 1].acts);
    if (i > 0) EXPECT_GE(seen[i].simulated_s, seen[i - 1].simulated_s);
  }
  EXPECT_EQ(seen.back().acts, want);
}

// An ACC acts once per input piece, though it makes one piece per acc_count: the total counts
// its acts (4 micro-batches a step: 4 source, 4 ACC and 1 sink acts a step).
TEST(Simulator, ProgressCountsEveryActOfAnAcc) {
  PlanBuilder b(1, /*pieces_per_step=*/4);
  const int64_t s = b.Task(plan::SOURCE, 0, "s");
  const int64_t acc = b.Task(plan::ACC, 0, "acc");
  b.task(acc).set_acc_count(4);
  const int64_t k = b.Task(plan::SINK, 0, "k");
  b.Regst(s, {acc}, Shape({16}));
  b.Regst(acc, {k}, Shape({16}));
  int64_t total = 0, acts = 0;
  SimOptions options;
  options.steps = 3;
  options.progress_every = 1;
  options.progress = [&](const SimProgress& p) {
    total = p.total_acts;
    acts = p.acts;
  };
  ASSERT_TRUE(Simulate(b.Build(), Cluster(1, 1e10, 0), options).finished);
  EXPECT_EQ(total, 3 * (4 + 4 + 1));
  EXPECT_EQ(acts, total);
}

// One of R data-parallel replicas: an optimizer update waits for its gradient's all-reduce
// over the replicas, a ring over the inter-node links.
TEST(Simulator, ReplicasAllReduceEachGradientBeforeTheUpdate) {
  const int64_t bytes = int64_t{16} << 20;
  PlanBuilder b(1);
  const int64_t w = b.Task(plan::VARIABLE, 0, "w");
  const int64_t g = b.Task(plan::SOURCE, 0, "grad");
  const int64_t u = b.Task(plan::COMPUTE, 0, "update", "sgd_update");
  b.task(u).set_optimizer_update(true);  // the trait, not the op type, marks an update
  b.task(u).set_pass(plan::PASS_OPTIMIZER);
  b.Regst(w, {u}, Shape{bytes / 4});
  b.Regst(g, {u}, Shape{bytes / 4});
  const plan::Plan plan = b.Build();
  const Topology cluster = Cluster(1, 1e11, 0);  // inter-node: 1e9 B/s, no latency
  SimOptions one;
  SimOptions four;
  four.data_parallel_replicas = 4;
  const SimResult alone = Simulate(plan, cluster, one);
  const SimResult replica = Simulate(plan, cluster, four);
  ASSERT_TRUE(alone.finished && replica.finished);
  const double ring = 2.0 * 3 / 4 * bytes / 1e9;
  EXPECT_NEAR(replica.total_s - alone.total_s, ring, 1e-6 * ring);
  EXPECT_DOUBLE_EQ(replica.devices[0].inter_bytes, 2.0 * 3 / 4 * bytes);
}

TEST(Simulator, TwoRunsGiveByteIdenticalTraces) {
  SimOptions options;
  options.trace = true;
  options.steps = 2;
  const plan::Plan plan = Pipeline(4, 8, 3e8);
  const SimResult a = Simulate(plan, Cluster(4, 1e10, 1e-6), options);
  const SimResult b = Simulate(plan, Cluster(4, 1e10, 1e-6), options);
  ASSERT_TRUE(a.finished);
  EXPECT_FALSE(a.trace.spans.empty());
  for (const trace::TraceFormat f :
       {trace::TraceFormat::kChromeJson, trace::TraceFormat::kPerfetto}) {
    EXPECT_EQ(trace::EncodeTrace(plan, a.trace, {"sim", "gpu", {}}, f),
              trace::EncodeTrace(plan, b.trace, {"sim", "gpu", {}}, f));
  }
  EXPECT_EQ(a.total_s, b.total_s);
}

TEST(Simulator, ADeadlockIsReportedWithWhatWaits) {
  // stage1 feeds stage0 back with lag 1 but the forward register has 1 slot and the loop
  // register needs its consumer first: a cycle within one piece.
  PlanBuilder b(1);
  const int64_t x = b.Task(plan::SOURCE, 0, "x");
  const int64_t f = b.Task(plan::COMPUTE, 0, "f", "relu");
  const int64_t g = b.Task(plan::COMPUTE, 0, "g", "relu");
  b.Regst(x, {f}, Shape{4});
  b.Regst(f, {g}, Shape{4});
  b.Regst(g, {f}, Shape{4}, /*slots=*/1, /*lag=*/2);  // f:p needs g:p-2; g fills 1 slot
  SimOptions options;
  options.steps = 6;
  const SimResult r = Simulate(b.Build(), Cluster(1, 1e10, 0), options);
  EXPECT_FALSE(r.finished);
  EXPECT_NE(r.deadlock_report.find("g "), std::string::npos) << r.deadlock_report;
  EXPECT_NE(r.deadlock_report.find("regst 2"), std::string::npos) << r.deadlock_report;
}

TEST(Simulator, LiveMemoryStaysWithinThePlannedPeak) {
  SimOptions options;
  options.trace = true;
  const plan::Plan plan = Pipeline(3, 6, 1e8);
  const SimResult r = Simulate(plan, Cluster(3, 1e10, 1e-6), options);
  ASSERT_TRUE(r.finished);
  for (const DeviceReport& d : r.devices) {
    EXPECT_GT(d.live_peak_bytes, 0) << d.name;
    EXPECT_LE(d.live_peak_bytes, d.peak_bytes) << d.name;
  }
  EXPECT_FALSE(r.trace.memory.empty()) << "memory counters";
}

TEST(Simulator, AnArenaLargerThanTheDeviceIsFlagged) {
  plan::Plan plan = Pipeline(2, 2, 1e6);
  plan.mutable_memory(1)->set_arena_bytes(int64_t{2} << 30);
  const SimResult r = Simulate(plan, Cluster(2, 1e10, 0), SimOptions{});
  EXPECT_FALSE(r.devices[0].out_of_memory);
  EXPECT_TRUE(r.devices[1].out_of_memory);
}

// The reserve (CUDA context, BLAS workspace, communicator buffers) is not the Plan's: an arena
// that fits the device's bytes but not what the reserve leaves of them does not fit.
TEST(Simulator, TheReserveCountsAgainstTheDevicesMemory) {
  plan::Plan plan = Pipeline(2, 2, 1e6);
  plan.mutable_memory(1)->set_arena_bytes(900'000'000);
  const Topology roomy = Cluster(2, 1e10, 0);
  EXPECT_FALSE(Simulate(plan, roomy, SimOptions{}).devices[1].out_of_memory);
  ClusterSpec spec = roomy.spec();
  spec.mutable_device()->set_reserved_bytes(200'000'000);
  EXPECT_EQ(UsableMemoryBytes(spec), 800'000'000);
  const SimResult r = Simulate(plan, Topology(spec), SimOptions{});
  EXPECT_FALSE(r.devices[0].out_of_memory);
  EXPECT_TRUE(r.devices[1].out_of_memory);
}

TEST(ClusterSpec, GpuPresetsReserveMemoryAndCpuHostsNone) {
  for (const std::string& name : PresetNames()) {
    const ClusterSpec spec = Preset(name, 1);
    if (spec.device().kind() == DEVICE_KIND_GPU) {
      EXPECT_GT(spec.device().reserved_bytes(), int64_t{1} << 30) << name;
      EXPECT_LT(spec.device().reserved_bytes(), spec.device().memory_bytes() / 20) << name;
    } else {
      EXPECT_EQ(spec.device().reserved_bytes(), 0) << name;
    }
  }
}

TEST(ClusterSpec, PresetsAndErrors) {
  for (const std::string& name : PresetNames()) {
    const ClusterSpec spec = Preset(name, 2);
    EXPECT_EQ(spec.nodes(), 2) << name;
  }
  EXPECT_EQ(Preset("dgx-h100", 128).devices_per_node(), 8);
  EXPECT_THROW(Preset("dgx-z9", 1), InvalidArgumentError);
  EXPECT_THROW(ParseClusterSpec("nodes: 'x'", "f.pbtxt"), InvalidArgumentError);
  EXPECT_THROW(ParseClusterSpec("devices_per_node: 8 device { peak_flops: -1 }", "f.pbtxt"),
               InvalidArgumentError);
  plan::Plan plan = Pipeline(2, 2, 1e6);
  EXPECT_THROW(Simulate(plan, Cluster(1, 1e10, 0), SimOptions{}), InvalidArgumentError);
}

std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  return text.replace(text.find(from), from.size(), to);
}

// Every field is range-checked, finite and positive where it must be, and the error names the
// field: NaN or negative kernel times, explicit zero nodes or cores, and link costs so extreme
// that they once broke lowering (bandwidth 1e-30) or gave nonsense (1e-10).
TEST(ClusterSpec, OutOfRangeFieldsAreRefusedNamingTheField) {
  const std::string base =
      "devices_per_node: 2 device { name: 'd' peak_flops: 1e12 memory_bandwidth: 1e12 "
      "memory_bytes: 1000000000 launch_overhead_s: 1e-6 flops_efficiency: 1 "
      "memory_efficiency: 1 } intra_node { bandwidth: 1e9 latency_s: 1e-6 efficiency: 1 } ";
  EXPECT_NO_THROW(ParseClusterSpec(base + "inter_node { bandwidth: 1e9 efficiency: 1 }", "f"));
  const std::string inter = "inter_node { bandwidth: 1e9 efficiency: 1 } ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {base + "inter_node { bandwidth: 1e-30 efficiency: 1 }", "inter_node.bandwidth"},
      {base + "inter_node { bandwidth: 1e-10 efficiency: 1 }", "inter_node.bandwidth"},
      {base + "inter_node { bandwidth: inf efficiency: 1 }", "inter_node.bandwidth"},
      {base + "inter_node { bandwidth: 1e9 latency_s: nan efficiency: 1 }", "latency_s"},
      {base + inter + "kernel_times { key: 'k' seconds: nan }", "kernel_times 'k' seconds"},
      {base + inter + "kernel_times { key: 'k' seconds: -1 }", "kernel_times 'k' seconds"},
      {base + inter + "kernel_times { key: 'k' seconds: 1 contended_seconds: -2 }",
       "contended_seconds"},
      {base + inter + "cores_per_node: 0", "cores_per_node"},
      {base + inter + "cores_per_node: -3", "cores_per_node"},
      {base + inter + "nodes: 0", "nodes"},
      {Replaced(base, "peak_flops: 1e12", "peak_flops: nan") + inter, "device.peak_flops"},
      {Replaced(base, "memory_bytes: 1000000000", "memory_bytes: 10") + inter,
       "device.memory_bytes"},
      {Replaced(base, "launch_overhead_s: 1e-6", "launch_overhead_s: -1e-6") + inter,
       "launch_overhead_s"},
      {Replaced(base, "memory_bytes: 1000000000", "memory_bytes: 1000000000 reserved_bytes: -1") +
           inter,
       "device.reserved_bytes"},
      {Replaced(base, "memory_bytes: 1000000000",
                "memory_bytes: 1000000000 reserved_bytes: 1000000000") +
           inter,
       "device.reserved_bytes"},
  };
  for (const auto& [text, field] : cases) {
    try {
      ParseClusterSpec(text, "f.pbtxt");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(e.message().find(field), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace twinflow::sim
