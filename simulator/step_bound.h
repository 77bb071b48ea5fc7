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
// the work, a broadcast repeats it), and the sum of each device's max(flops time, bytes time)
// is at least the max of the sums. So the devices of a placement are busy, on average, at
// least the logical work of their ops over their count, and the step is at least that long.
// Communication and pipeline bubbles only add to it; they are left out. A cluster with
// measured kernel times (calibrate) has no bound: 0.
#include "engine/graph/logical_graph.h"
#include "engine/graph/op_registry.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::sim {

double StepTimeLowerBound(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                          const ClusterSpec& spec);

}  // namespace twinflow::sim
