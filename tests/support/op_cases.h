#pragma once
// Random test cases for every op type, shared by the SBP rule property test and the gradient
// check. Each op family contributes a function returning its cases; a case draws a random,
// valid instance of one op (attrs, input metas and how to fill the inputs) from an Rng.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/core/attrs.h"
#include "engine/core/rng.h"
#include "engine/core/tensor.h"
#include "engine/graph/logical_graph.h"

namespace twinflow::testing {

struct OpInstance {
  std::string type;
  Attrs attrs;
  std::vector<graph::TensorMeta> inputs;
  // Fills input i; the default (when empty) is Tensor::Random. Ops with integer index inputs
  // (embedding ids, labels) or domain limits supply their own.
  std::vector<std::function<Tensor(Rng&)>> fill;
  // Inputs the gradient check must not perturb (integer ids, labels).
  std::vector<int> non_differentiable_inputs;
  // Floating inputs and outputs that stay f32 whatever dtype the op computes in (attention's
  // log-sum-exps): the GPU test converts the other floats to the dtype under test.
  std::vector<int> f32_inputs;
  std::vector<int> f32_outputs;
  // Inputs where NaN is a signal rather than a value, so it need not propagate: an update's
  // gradient factor (NaN skips the step), loss_scale_update's norm (NaN is an overflow).
  std::vector<int> nan_signal_inputs;
};

struct OpCase {
  std::string type;
  std::function<OpInstance(Rng&)> draw;
  bool check_gradient = true;  // false for non-differentiable ops (cast to int, argmax-like)
};

// One per op family file in engine/ops; AllOpCases() concatenates them.
std::vector<OpCase> MatmulCases();
std::vector<OpCase> ElementwiseCases();
std::vector<OpCase> ActivationCases();
std::vector<OpCase> ReductionCases();
std::vector<OpCase> SoftmaxCases();
std::vector<OpCase> NormalizationCases();
std::vector<OpCase> EmbeddingCases();
std::vector<OpCase> ShapeCases();
std::vector<OpCase> MiscCases();
std::vector<OpCase> AttentionCases();
std::vector<OpCase> GradControlCases();
std::vector<OpCase> AllOpCases();
// The same, by op type.
std::map<std::string, OpCase> OpCasesByType();

// A tensor filled by case i's filler (or Tensor::Random).
Tensor FillInput(const OpInstance& instance, int i, Rng& rng);

}  // namespace twinflow::testing
