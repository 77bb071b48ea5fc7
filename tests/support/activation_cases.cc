// Random instances of the activation family, rank 1..3, f32 and f64. relu inputs avoid a small
// band around the kink so that finite differences are meaningful.
#include "tests/support/case_helpers.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

// Values with |v| in [lo, hi), random sign unless `positive`; zero with probability `zeros`.
std::function<Tensor(Rng&)> Fill(Shape shape, DType dtype, double lo, double hi, bool positive,
                                 double zeros = 0) {
  return [=](Rng& rng) {
    Tensor t(shape, dtype);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = rng.Uniform() < zeros ? 0.0 : rng.Uniform(lo, hi);
      t.SetDouble(i, !positive && rng.UniformInt(0, 1) ? -v : v);
    }
    return t;
  };
}

OpInstance Draw(Rng& rng, const std::string& type) {
  const Shape shape = Shape(RandomDims(rng, 1, 3));
  const DType dtype = rng.UniformInt(0, 3) == 0 ? DType::kF64 : DType::kF32;
  OpInstance instance{type, {}, {{shape, dtype}}, {}, {}};
  if (type == "relu") instance.fill = {Fill(shape, dtype, 0.05, 2.0, false)};
  if (type == "gelu") instance.fill = {Fill(shape, dtype, 0.0, 3.0, false)};
  if (type.ends_with("_grad")) {
    instance.inputs.push_back({shape, dtype});
    if (type == "relu_grad") {
      // y = relu(x): zeros and positive values; the mask is flat in y, so y is not perturbed.
      instance.fill = {nullptr, Fill(shape, dtype, 0.05, 2.0, true, 0.3)};
      instance.non_differentiable_inputs = {1};
    } else if (type == "tanh_grad") {
      instance.fill = {nullptr, Fill(shape, dtype, 0.0, 0.95, false)};  // y = tanh(x)
    } else {
      instance.fill = {nullptr, Fill(shape, dtype, 0.0, 3.0, false)};
    }
  }
  return instance;
}

}  // namespace

std::vector<OpCase> ActivationCases() {
  std::vector<OpCase> cases;
  for (const char* type : {"relu", "gelu", "tanh", "exp", "silu", "relu_grad", "tanh_grad",
                           "gelu_grad", "silu_grad"}) {
    const std::string name = type;
    // gelu_grad and silu_grad have no gradient of their own (no second derivative is built).
    const bool second = name != "gelu_grad" && name != "silu_grad";
    cases.push_back({name, [name](Rng& rng) { return Draw(rng, name); }, second});
  }
  return cases;
}

}  // namespace twinflow::testing
