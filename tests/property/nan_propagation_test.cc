// NaN propagates through every op with CPU kernels (every family: matmul, elementwise,
// activation, reduction, softmax and the losses, normalization, embedding, shape, misc and the
// optimizer updates). For a random instance of the op (tests/support/*_cases.cc), a random
// element of a random floating-point input is set to NaN. Which outputs read that element is
// found by running the op again with the element replaced by large finite values: every
// floating-point output element that changes reads it, and must be NaN in the NaN run. So a
// kernel that turns a NaN it reads into a number (relu as max(x, 0), a max that skips NaN)
// fails, while elements an op does not read (a slice's outside, an embedding row no id looks
// up, a `like` input's values) are not asked to change. Integer outputs cannot hold NaN
// (cast gives 0) and are not checked. Masks that pass dy * 0 (relu_grad, reduce_max_grad,
// dropout) are checked by unit.NanPropagation, since their NaN output does not depend on a
// finite perturbation. Inputs whose NaN is a signal (OpInstance::nan_signal_inputs: the
// gradient factor that skips an update) are not perturbed.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "tests/support/op_runner.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow::testing {
namespace {

std::vector<std::string> OpTypesWithFloatInputs() {
  std::vector<std::string> types;
  Rng rng(1);
  for (const auto& [type, c] : OpCasesByType()) {
    bool floating = false;  // in some draw: a case may draw integer dtypes too
    for (int draw = 0; draw < 32 && !floating; ++draw) {
      for (const graph::TensorMeta& meta : c.draw(rng).inputs) floating |= IsFloating(meta.dtype);
    }
    if (floating) types.push_back(type);
  }
  return types;
}

bool Same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

class NanPropagation : public ::testing::TestWithParam<std::string> {};

TEST_P(NanPropagation, EveryOutputElementThatReadsANanIsNan) {
  const OpCase op_case = OpCasesByType().at(GetParam());
  const OpRunner runner{BuiltinRegistry(), CpuRegistry()};
  const bool ok = rc::check(GetParam() + " propagates NaN", [&] {
    Rng rng(*rc::gen::inRange<uint64_t>(0, uint64_t{1} << 40));
    const OpInstance instance = op_case.draw(rng);
    std::vector<Tensor> inputs;
    std::vector<int> candidates;  // floating-point inputs with elements
    for (size_t i = 0; i < instance.inputs.size(); ++i) {
      inputs.push_back(FillInput(instance, static_cast<int>(i), rng));
      const bool signal = std::count(instance.nan_signal_inputs.begin(),
                                     instance.nan_signal_inputs.end(), static_cast<int>(i)) > 0;
      if (IsFloating(inputs.back().dtype()) && inputs.back().numel() > 0 && !signal) {
        candidates.push_back(static_cast<int>(i));
      }
    }
    RC_PRE(!candidates.empty());
    const int which = *rc::gen::elementOf(candidates);
    const int64_t at = *rc::gen::inRange<int64_t>(0, inputs[which].numel());
    auto run_with = [&](double value) {
      std::vector<Tensor> changed = inputs;
      changed[which].SetDouble(at, value);
      return runner.RunSingle(instance, changed);
    };
    const std::vector<Tensor> base = runner.RunSingle(instance, inputs);
    const std::vector<Tensor> nan = run_with(std::nan(""));
    const std::vector<std::vector<Tensor>> moved = {run_with(1e3), run_with(-1e3)};
    RC_LOG() << instance.type << " " << instance.attrs.ToString() << ": NaN at element " << at
             << " of input " << which << " " << instance.inputs[which].ToString() << "\n";
    for (size_t o = 0; o < base.size(); ++o) {
      if (!IsFloating(base[o].dtype())) continue;
      for (int64_t e = 0; e < base[o].numel(); ++e) {
        bool reads = false;
        for (const auto& outputs : moved) {
          reads |= !Same(outputs[o].GetDouble(e), base[o].GetDouble(e));
        }
        if (!reads) continue;
        RC_LOG() << "output " << o << " element " << e << " = " << nan[o].GetDouble(e) << "\n";
        RC_ASSERT(std::isnan(nan[o].GetDouble(e)));
      }
    }
  });
  EXPECT_TRUE(ok);
}

INSTANTIATE_TEST_SUITE_P(AllOps, NanPropagation, ::testing::ValuesIn(OpTypesWithFloatInputs()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace twinflow::testing
