// Random instances of layer_norm, rms_norm and their gradients: x of rank 1..3 normalised over
// its last axis, gamma (and layer_norm's beta) of that extent.
#include "tests/support/case_helpers.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

OpInstance DrawNorm(Rng& rng, const std::string& type) {
  const Shape x = RandomShape(rng, static_cast<int>(rng.UniformInt(1, 3)));
  const Shape hidden{x[x.rank() - 1]};
  Attrs attrs;
  const double epsilons[] = {1e-5, 1e-3, 0.1};
  if (rng.UniformInt(0, 3) > 0) attrs.Set("epsilon", epsilons[rng.UniformInt(0, 2)]);
  OpInstance instance{type, attrs, {{x, DType::kF32}, {hidden, DType::kF32}}, {}, {}};
  // layer_norm takes beta; the gradients take dy; rms_norm takes neither.
  if (type == "layer_norm") instance.inputs.push_back({hidden, DType::kF32});
  if (type.ends_with("_grad")) instance.inputs.push_back({x, DType::kF32});
  return instance;
}

}  // namespace

std::vector<OpCase> NormalizationCases() {
  return {
      {"layer_norm", [](Rng& rng) { return DrawNorm(rng, "layer_norm"); }},
      {"layer_norm_grad", [](Rng& rng) { return DrawNorm(rng, "layer_norm_grad"); },
       /*check_gradient=*/false},
      {"rms_norm", [](Rng& rng) { return DrawNorm(rng, "rms_norm"); }},
      {"rms_norm_grad", [](Rng& rng) { return DrawNorm(rng, "rms_norm_grad"); },
       /*check_gradient=*/false},
  };
}

}  // namespace twinflow::testing
