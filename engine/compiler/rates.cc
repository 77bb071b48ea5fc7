#include "engine/compiler/rates.h"

#include "engine/core/error.h"

namespace twinflow::compiler {

bool IsOptimizerUpdate(const graph::OpNode& op) {
  return op.type == "sgd_update" || op.type == "sgd_momentum_update" ||
         op.type == "adam_update";
}

std::vector<Rate> OpRates(const graph::LogicalGraph& graph) {
  std::vector<Rate> rates(graph.ops().size(), Rate::kStep);
  for (const graph::OpId id : graph.TopologicalOrder()) {
    const graph::OpNode& op = graph.op(id);
    if (op.type == "input") {
      rates[id] = Rate::kMicroBatch;
      continue;
    }
    bool micro_input = false;
    for (graph::TensorId t : op.inputs) {
      micro_input = micro_input || rates[graph.tensor(t).producer] == Rate::kMicroBatch;
    }
    if (!micro_input) continue;
    if (IsOptimizerUpdate(op)) continue;  // sums its micro-batch gradients: per step
    if (op.type == "assign" || op.type == "step_increment") {
      throw InvalidArgumentError("op '" + op.name + "' (" + op.type +
                                 ") updates state from a per-micro-batch value");
    }
    rates[id] = Rate::kMicroBatch;
  }
  return rates;
}

}  // namespace twinflow::compiler
