#pragma once
// A lower bound on the step time Simulate reports for any Plan compiled from a logical graph,
// read from the graph alone (nothing compiled): `twinflow tune` skips a strategy whose bound
// is slower than the strategies it would rank above it.
//
// Why it holds: a device's compute stream runs one act at a time (actor_driver.cc), and an
// act of a kernel takes at least the larger of its flops at the device's best compute
// efficiency and its bytes at its best memory efficiency (act_timing.cc: a GEMM's tile and K
// overheads only add work, launches only add time). Splitting an op over devices and
// micro-batches leaves its total flops and bytes at least the logical op's (a split divides
// the work, a broadcast repeats it; the graph holds one micro-batch, run once for each), and the
// sum of each device's max(flops time, bytes time) is at least the max of the sums. So the devices
// of a placement are busy, on average, at least the logical work of their ops over their count, and
// the step is at least that long. Each device of a placement also launches each of its ops once a
// step or once a micro-batch (the op's rate, compiler/rates.h): every op becomes one task on every
// device of its placement. Communication and pipeline bubbles only add to it; they are left out. A
// cluster with measured kernel times (calibrate) has no bound: 0.
#include <cstdint>
#include <vector>

#include "engine/graph/logical_graph.h"
#include "engine/graph/op_registry.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::planner {

// What the bound is made of, read once from a logical graph; the micro-batches only weigh it.
struct WorkProfile {
  bool bounded = false;  // false on a cluster with measured kernel times: no bound (0)
  double launch_s = 0;   // the device's launch overhead
  // The ops sharing one set of devices (a placement's), and their kernels' least seconds over
  // all their devices: once a step, and once a micro-batch (the graph holds one micro-batch).
  struct Placement {
    int64_t devices = 0;
    double step_kernel_s = 0, micro_batch_kernel_s = 0;
    int64_t step_ops = 0, micro_batch_ops = 0;
  };
  std::vector<Placement> placements;
  int64_t micro_batches = 1;  // the graph's: its micro-batch is the step's batch over these
};

// `micro_batches`: the model's (its graph holds the step's batch over these).
WorkProfile ProfileWork(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                        const sim::ClusterSpec& spec, int64_t micro_batches);

// No Plan of the profiled model with `micro_batches` micro-batches a step (its batch split so)
// steps faster on the cluster it was profiled for. A step's per-micro-batch work does not
// shrink with more, smaller micro-batches (the flops stay, each act reads its weights again,
// a GEMM reducing over the batch pays its K overhead on a smaller K), so more than the
// profile's take its work; fewer take only the launches and the once-a-step work.
double StepTimeLowerBound(const WorkProfile& profile, int64_t micro_batches);

}  // namespace twinflow::planner
