#pragma once
// ReferenceInterpreter: runs a LogicalGraph on one CPU device, op by op in topological order,
// with the CPU kernels. It is the ground truth that distributed runs are compared against.
// (It needs both the graph and the kernels, so it lives in its own folder rather than in
// kernels/, which depends on engine/core alone; see docs/architecture.md.)
#include <map>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/graph/logical_graph.h"
#include "kernels/kernel.h"

namespace twinflow::interpreter {

class ReferenceInterpreter {
 public:
  // Variables are initialised here, by their own kernels, from their seeds.
  ReferenceInterpreter(const graph::LogicalGraph& graph, const kernels::KernelRegistry& kernels);

  // Runs every op once. `feeds` gives each input op's value by op name (InvalidArgumentError
  // naming a missing or mis-shaped feed). Returns the values of `fetch`. After the step each
  // `assign` op writes its value into its variable.
  std::map<graph::TensorId, Tensor> Step(const std::map<std::string, Tensor>& feeds,
                                         const std::vector<graph::TensorId>& fetch);

  // A variable's current value, by op name (InvalidArgumentError when unknown).
  const Tensor& variable(const std::string& name) const;
  void set_variable(const std::string& name, Tensor value);

 private:
  const graph::LogicalGraph& graph_;
  const kernels::KernelRegistry& kernels_;
  std::vector<graph::OpId> order_;
  std::map<std::string, Tensor> variables_;
};

}  // namespace twinflow::interpreter
