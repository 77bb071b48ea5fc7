// How fast the simulator runs large synthetic workloads.
//
// BM_SyntheticDataParallel/N: N nodes of 8 NPUs (450 GB/s inside a node, 50 GB/s between
// nodes), 32 layers, each 1 ms forward and 2 ms backward per device, and a 25 MiB all-reduce of
// each layer's gradient over all the NPUs as its backward finishes; N = 128 (1,024 NPUs, the
// workload ASTRA-sim's analytical backend took 72 s on) and 2,048 (16,384 NPUs: the cluster-
// scale issue's goal, 5 s). The Plan is built by hand, whole (every device's tasks): per device
// a source, 32 forward tasks, 32 backward tasks (in reverse), 32 collectives and a sink.
// Counters: events, events_per_s, simulated step_ms, the Plan's tasks.
#include <benchmark/benchmark.h>

#include <string>

#include "simulator/sim_executor.h"

namespace twinflow::sim {
namespace {

constexpr int kPerNode = 8;
constexpr int kLayers = 32;
constexpr double kPeak = 1e15;
constexpr int64_t kGradientBytes = int64_t{25} << 20;

class PlanMaker {
 public:
  int64_t Task(plan::TaskKind kind, int device, const std::string& name, double flops = 0) {
    plan::Task* t = plan.add_tasks();
    t->set_id(plan.tasks_size() - 1);
    t->set_kind(kind);
    t->set_device(device);
    t->set_name(name);
    t->set_flops(flops);
    return t->id();
  }
  void Regst(int64_t producer, int64_t consumer, int64_t bytes) {
    plan::Regst* r = plan.add_regsts();
    r->set_id(plan.regsts_size() - 1);
    r->set_producer(producer);
    r->add_consumers(consumer);
    r->set_slots(1);
    r->set_bytes_per_slot(bytes);
    r->mutable_tensor()->set_dtype(plan::DTYPE_F32);
    r->mutable_tensor()->add_shape(bytes / 4);
    plan.mutable_tasks(static_cast<int>(producer))->add_produced_regsts(r->id());
    plan.mutable_tasks(static_cast<int>(consumer))->add_consumed_regsts(r->id());
  }
  plan::Plan plan;
};

// Folded (`folded`), the Plan holds node 0's devices only and stands them in for every node,
// as `twinflow sim` folds a data-parallel Plan (docs/simulator.md, Folded plans): the
// all-reduce group spans the copies, and its flows still run on every node's links.
plan::Plan DataParallelPlan(int nodes, bool folded) {
  PlanMaker m;
  const int devices = folded ? kPerNode : nodes * kPerNode;
  if (folded && nodes > 1) {
    m.plan.mutable_fold()->set_copies(nodes);
    m.plan.mutable_fold()->set_stride(kPerNode);
    m.plan.mutable_fold()->set_block(int64_t{nodes} * kPerNode);
  }
  plan::CommGroup* group = m.plan.add_groups();
  group->set_spans_copies(folded && nodes > 1);
  for (int d = 0; d < devices; ++d) {
    plan::Device* device = m.plan.add_devices();
    device->set_id(d);
    device->set_type(plan::DEVICE_CUDA);  // an accelerator: the simulator prices any
    device->set_index(d);
    group->add_devices(d);
  }
  for (int d = 0; d < devices; ++d) {
    const std::string at = "@" + std::to_string(d);
    int64_t previous = m.Task(plan::SOURCE, d, "batch" + at);
    for (int l = 0; l < kLayers; ++l) {
      const int64_t f = m.Task(plan::COMPUTE, d, "fwd" + std::to_string(l) + at, 1e-3 * kPeak);
      m.Regst(previous, f, 4);
      previous = f;
    }
    for (int l = kLayers - 1; l >= 0; --l) {
      const int64_t b = m.Task(plan::COMPUTE, d, "bwd" + std::to_string(l) + at, 2e-3 * kPeak);
      m.Regst(previous, b, 4);
      previous = b;
      const int64_t c = m.Task(plan::COLLECTIVE, d, "all_reduce" + std::to_string(l) + at);
      m.plan.mutable_tasks(static_cast<int>(c))->mutable_collective()->set_kind(plan::ALL_REDUCE);
      m.plan.mutable_tasks(static_cast<int>(c))->mutable_collective()->set_member(d);
      m.plan.mutable_tasks(static_cast<int>(c))->set_issue_order(l);
      m.Regst(b, c, kGradientBytes);
      const int64_t sink = m.Task(plan::SINK, d, "grad" + std::to_string(l) + at);
      m.Regst(c, sink, kGradientBytes);
    }
    const int64_t sink = m.Task(plan::SINK, d, "loss" + at);
    m.Regst(previous, sink, 4);
  }
  return m.plan;
}

Topology NpuCluster(int nodes) {
  return Topology(ParseClusterSpec(
      "name: 'npu' nodes: " + std::to_string(nodes) +
          " devices_per_node: 8"
          " device { name: 'npu' peak_flops: 1e15 memory_bandwidth: 2e12 memory_bytes: 68719476736"
          " launch_overhead_s: 0 flops_efficiency: 1 memory_efficiency: 1 }"
          " intra_node { bandwidth: 450e9 latency_s: 2e-6 efficiency: 1 }"
          " inter_node { bandwidth: 50e9 latency_s: 5e-6 efficiency: 1 }",
      "synthetic cluster"));
}

void BM_SyntheticDataParallel(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const plan::Plan plan = DataParallelPlan(nodes, state.range(1) != 0);
  const Topology topology = NpuCluster(nodes);
  SimResult result;
  for (auto _ : state) {
    result = Simulate(plan, topology, SimOptions{});
    benchmark::DoNotOptimize(result.total_s);
  }
  state.counters["tasks"] = plan.tasks_size();
  state.counters["events"] = static_cast<double>(result.events);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(result.events) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["step_ms"] = result.step_s * 1e3;
  state.counters["finished"] = result.finished;
}
BENCHMARK(BM_SyntheticDataParallel)
    ->Unit(benchmark::kMillisecond)
    ->ArgNames({"nodes", "folded"})
    ->Args({128, 0})
    ->Args({2048, 0})
    ->Args({128, 1})
    ->Args({2048, 1})
    ->Iterations(1);

}  // namespace
}  // namespace twinflow::sim

BENCHMARK_MAIN();
