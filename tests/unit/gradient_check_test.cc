// Gradient check for every differentiable op: the gradients autograd builds (from each
// OpDef's gradient function, run by the reference interpreter) match central finite
// differences of a random linear functional of the op's outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/graph/autograd.h"
#include "engine/interpreter/reference_interpreter.h"
#include "tests/support/op_cases.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow::testing {
namespace {

std::vector<OpCase> DifferentiableCases() {
  std::vector<OpCase> cases;
  for (OpCase& c : AllOpCases()) {
    if (c.check_gradient) cases.push_back(std::move(c));
  }
  return cases;
}

// loss = sum over float outputs o of reduce_sum(y_o * w_o), with w_o fed as inputs.
struct Probe {
  graph::LogicalGraph graph;
  std::vector<graph::TensorId> inputs;
  std::vector<graph::TensorId> weights;
  graph::TensorId loss = -1;
  std::map<graph::TensorId, graph::TensorId> gradients;  // input -> gradient
};

Probe BuildProbe(const OpInstance& instance) {
  graph::GraphBuilder builder(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
  Probe probe;
  for (size_t i = 0; i < instance.inputs.size(); ++i) {
    probe.inputs.push_back(
        builder.Input("x" + std::to_string(i), instance.inputs[i].shape, instance.inputs[i].dtype));
  }
  const std::vector<graph::TensorId> outputs =
      builder.Add(instance.type, probe.inputs, instance.attrs, "probed");
  std::optional<graph::TensorId> loss;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const graph::TensorMeta meta =
        builder.meta(outputs[o]);  // a copy: Input() below grows the graph
    if (!IsFloating(meta.dtype)) continue;
    const graph::TensorId w = builder.Input("w" + std::to_string(o), meta.shape, meta.dtype);
    probe.weights.push_back(w);
    std::vector<int64_t> axes;
    for (int k = 0; k < meta.shape.rank(); ++k) axes.push_back(k);
    const graph::TensorId term = builder.Add1("reduce_sum", {builder.Add1("mul", {outputs[o], w})},
                                              Attrs{{"axes", axes}, {"keepdims", false}});
    loss = loss ? builder.Add1("add", {*loss, term}) : term;
  }
  probe.loss = *loss;
  std::vector<graph::TensorId> wrt;
  for (size_t i = 0; i < probe.inputs.size(); ++i) {
    const auto& skip = instance.non_differentiable_inputs;
    if (std::find(skip.begin(), skip.end(), static_cast<int>(i)) == skip.end() &&
        IsFloating(instance.inputs[i].dtype)) {
      wrt.push_back(probe.inputs[i]);
    }
  }
  probe.gradients = graph::AddBackward(builder, probe.loss, wrt);
  probe.graph = builder.graph();
  return probe;
}

class GradientCheck : public ::testing::TestWithParam<std::string> {};

TEST_P(GradientCheck, MatchesCentralDifferences) {
  OpCase op_case;
  for (OpCase& c : DifferentiableCases()) {
    if (c.type == GetParam()) op_case = std::move(c);
  }
  Rng rng(42);
  int checked = 0;
  for (int trial = 0; trial < 4; ++trial) {
    const OpInstance instance = op_case.draw(rng);
    const Probe probe = BuildProbe(instance);
    interpreter::ReferenceInterpreter interp(probe.graph, CpuRegistry());
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < instance.inputs.size(); ++i) {
      feeds["x" + std::to_string(i)] = FillInput(instance, static_cast<int>(i), rng);
    }
    for (const graph::TensorId w : probe.weights) {
      const graph::TensorNode& node = probe.graph.tensor(w);
      feeds[probe.graph.op(node.producer).name] =
          Tensor::Random(node.meta.shape, node.meta.dtype, rng);
    }
    std::vector<graph::TensorId> fetch;
    for (const auto& [input, gradient] : probe.gradients) fetch.push_back(gradient);
    const auto analytic = interp.Step(feeds, fetch);
    const auto loss_at = [&](const std::string& name, int64_t index, double delta) {
      std::map<std::string, Tensor> shifted = feeds;
      shifted[name].SetDouble(index, shifted[name].GetDouble(index) + delta);
      return interp.Step(shifted, {probe.loss}).at(probe.loss).GetDouble(0);
    };
    for (size_t i = 0; i < probe.inputs.size(); ++i) {
      const auto it = probe.gradients.find(probe.inputs[i]);
      if (it == probe.gradients.end()) continue;
      const std::string name = "x" + std::to_string(i);
      const Tensor& grad = analytic.at(it->second);
      ASSERT_EQ(grad.shape(), instance.inputs[i].shape) << name;
      for (int sample = 0; sample < 6 && feeds[name].numel() > 0; ++sample) {
        const int64_t index = rng.UniformInt(0, feeds[name].numel() - 1);
        const double scale = std::max(1.0, std::fabs(feeds[name].GetDouble(index)));
        const double h = 1e-2 * scale;
        const double wide = (loss_at(name, index, h) - loss_at(name, index, -h)) / (2 * h);
        const double narrow = (loss_at(name, index, h / 2) - loss_at(name, index, -h / 2)) / h;
        const double tolerance = 2e-2 * std::max({1.0, std::fabs(wide), std::fabs(narrow)});
        // Near a kink (relu at 0, a max tie) the two step sizes disagree: skip the point.
        if (std::fabs(wide - narrow) > tolerance) continue;
        EXPECT_NEAR(grad.GetDouble(index), narrow, tolerance)
            << instance.type << " " << instance.attrs.ToString() << " d/d" << name << "[" << index
            << "]";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0) << "no gradient element was checked for " << GetParam();
}

std::vector<std::string> DifferentiableTypes() {
  std::vector<std::string> types;
  for (const OpCase& c : DifferentiableCases()) types.push_back(c.type);
  return types;
}

INSTANTIATE_TEST_SUITE_P(AllOps, GradientCheck, ::testing::ValuesIn(DifferentiableTypes()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace twinflow::testing
