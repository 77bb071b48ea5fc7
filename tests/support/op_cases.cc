#include "tests/support/op_cases.h"

namespace twinflow::testing {

std::vector<OpCase> AllOpCases() {
  std::vector<OpCase> all;
  for (auto family : {MatmulCases, ElementwiseCases, ActivationCases, ReductionCases, SoftmaxCases,
                      NormalizationCases, EmbeddingCases, ShapeCases, MiscCases, AttentionCases,
                      GradControlCases}) {
    for (OpCase& c : family()) all.push_back(std::move(c));
  }
  return all;
}

std::map<std::string, OpCase> OpCasesByType() {
  std::map<std::string, OpCase> cases;
  for (OpCase& c : AllOpCases()) cases.emplace(c.type, std::move(c));
  return cases;
}

Tensor FillInput(const OpInstance& instance, int i, Rng& rng) {
  if (i < static_cast<int>(instance.fill.size()) && instance.fill[i]) return instance.fill[i](rng);
  return Tensor::Random(instance.inputs[i].shape, instance.inputs[i].dtype, rng);
}

}  // namespace twinflow::testing
