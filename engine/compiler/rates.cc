#include "engine/compiler/rates.h"

#include "engine/core/error.h"

namespace twinflow::compiler {

std::vector<Rate> OpRates(const graph::LogicalGraph& graph, const graph::OpRegistry& registry) {
  std::vector<Rate> rates(graph.ops().size(), Rate::kStep);
  for (const graph::OpId id : graph.TopologicalOrder()) {
    const graph::OpNode& op = graph.op(id);
    const graph::OpRole role = registry.Find(op.type).role;
    if (role == graph::OpRole::kInput) {
      rates[id] = Rate::kMicroBatch;
      continue;
    }
    bool micro_input = false;
    for (graph::TensorId t : op.inputs) {
      micro_input = micro_input || rates[graph.tensor(t).producer] == Rate::kMicroBatch;
    }
    if (!micro_input) continue;
    // sums its micro-batch gradients: per step
    if (role == graph::OpRole::kOptimizerUpdate || role == graph::OpRole::kGradientStatistic) {
      continue;
    }
    if (graph::UpdatesState(role)) {
      throw InvalidArgumentError("op '" + op.name + "' (" + op.type +
                                 ") updates state from a per-micro-batch value");
    }
    rates[id] = Rate::kMicroBatch;
  }
  return rates;
}

}  // namespace twinflow::compiler
