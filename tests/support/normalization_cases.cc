// Random instances of layer_norm and layer_norm_grad: x of rank 1..3 normalised over its last
// axis, gamma and beta of that extent.
#include "tests/support/case_helpers.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

OpInstance DrawLayerNorm(Rng& rng, const std::string& type) {
  const Shape x = RandomShape(rng, static_cast<int>(rng.UniformInt(1, 3)));
  const Shape hidden{x[x.rank() - 1]};
  Attrs attrs;
  const double epsilons[] = {1e-5, 1e-3, 0.1};
  if (rng.UniformInt(0, 3) > 0) attrs.Set("epsilon", epsilons[rng.UniformInt(0, 2)]);
  OpInstance instance{type, attrs, {{x, DType::kF32}, {hidden, DType::kF32}}, {}, {}};
  // layer_norm takes beta; layer_norm_grad takes dy.
  instance.inputs.push_back(type == "layer_norm" ? graph::TensorMeta{hidden, DType::kF32}
                                                 : graph::TensorMeta{x, DType::kF32});
  return instance;
}

}  // namespace

std::vector<OpCase> NormalizationCases() {
  return {
      {"layer_norm", [](Rng& rng) { return DrawLayerNorm(rng, "layer_norm"); }},
      {"layer_norm_grad", [](Rng& rng) { return DrawLayerNorm(rng, "layer_norm_grad"); },
       /*check_gradient=*/false},
  };
}

}  // namespace twinflow::testing
