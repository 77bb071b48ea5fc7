#pragma once
// The sbp_search pass: one N-D SBP signature per op of a LogicalGraph, minimising compute time
// plus boxing time, both priced by the CostModel (the same model the simulator uses). It
// honours tensor pins and a per-device memory limit covering every tensor of the graph (with
// autograd and the optimizer appended, that is parameters, gradients, optimizer state and
// activations), and says clearly when nothing fits. The combinatorial core is MinSumSolver
// (min_sum_solver.h); docs/sbp_search.md explains the model and the algorithm.
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine/graph/logical_graph.h"
#include "engine/graph/op_def.h"
#include "engine/graph/op_registry.h"
#include "engine/sbp/boxing_plan.h"
#include "engine/sbp/boxing_planner.h"
#include "engine/sbp/cost_model.h"

namespace twinflow::compiler {

struct BoxingTimes;  // boxing_pricer.h

struct SbpSearchOptions {
  enum class Method {
    kExact,      // the min-sum search over every op at once
    kPropagate,  // each op in topological order takes its cheapest signature given its
                 // producers' choices: how pinned strategies (Megatron, OneFlow) settle the
                 // layouts between their pins; linear in the graph, for very large models
  };
  Method method = Method::kExact;
  double memory_limit = std::numeric_limits<double>::infinity();  // bytes per device
  int64_t table_budget = int64_t{1} << 22;                        // see MinSumSolver
  // Restrict the search to pure data parallelism: inputs split on the batch over every mesh
  // axis, variables replicated.
  bool data_parallel_only = false;
  // The chosen boxings with their send-recv transfer lists (for lowering) or priced only.
  sbp::BoxingDetail boxing_detail = sbp::BoxingDetail::kTransfers;
  // Called as the edges are priced and as the chosen boxings are planned, with the ops done of
  // all (twice over the graph: pricing, then planning); it must not throw.
  std::function<void(int64_t done, int64_t total)> progress;
  // Boxing times kept across searches whose cost models price alike (boxing_pricer.h); null:
  // this search prices its own.
  std::shared_ptr<BoxingTimes> shared_times;
};

// One edge whose producer and consumer layouts differ, with the boxing that joins them. Edges
// that box alike (layer after layer) share one plan: a send_recv among a thousand devices
// lists a million transfers, and a copy per edge ran a 96-layer GPT-3 out of memory.
struct BoxingEdge {
  graph::TensorId tensor = -1;
  graph::OpId consumer = -1;
  int input_index = 0;
  std::shared_ptr<const sbp::BoxingPlan> plan;
};

struct SbpAssignment {
  std::vector<graph::NdSbpSignature> signatures;  // by op id
  std::vector<BoxingEdge> boxings;                // by consumer op id, then input index
  double compute_time = 0;                        // seconds, summed over ops
  double boxing_time = 0;                         // seconds, summed over boxings
  double peak_memory = 0;                         // bytes on the fullest device
  bool exact = false;                             // proven optimal
  double cost() const { return compute_time + boxing_time; }
};

// Throws SbpError naming the op when pins leave an op no signature, and OutOfMemoryError
// naming the placement and the largest tensors when no assignment fits the memory limit.
SbpAssignment SearchSbp(const graph::LogicalGraph& graph, const graph::OpRegistry& registry,
                        const sbp::CostModel& cost_model, const SbpSearchOptions& options = {});

// The layout op `op`'s signature gives to tensor `tensor` as its producer writes it.
sbp::Layout ProducedLayout(const graph::LogicalGraph& graph, const SbpAssignment& assignment,
                           graph::TensorId tensor);

}  // namespace twinflow::compiler
