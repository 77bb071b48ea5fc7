// Random instances of gradient clipping, loss scaling and the learning-rate schedule:
// sum_squares, grad_factor, loss_scale_update and lr_schedule (engine/ops/grad_control_ops.cc).
// None is differentiable.
#include <limits>

#include "tests/support/case_helpers.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

// A scalar from `values`, one picked at random: overflow (inf, NaN) included where it matters.
std::function<Tensor(Rng&)> OneOf(std::vector<double> values) {
  return [values](Rng& rng) {
    Tensor t(Shape{}, DType::kF32);
    t.SetDouble(0, values[rng.UniformInt(0, static_cast<int64_t>(values.size()) - 1)]);
    return t;
  };
}

constexpr double kInf = std::numeric_limits<double>::infinity();

OpInstance GradFactor(Rng& rng) {
  OpInstance instance{"grad_factor",
                      Attrs{{"max_norm", rng.UniformInt(0, 1) * rng.Uniform(0.1, 3)}},
                      {F32(Shape{})},
                      {},
                      {}};
  instance.fill = {OneOf({0.0, 0.25, 4.0, 100.0, kInf})};
  if (rng.UniformInt(0, 1) == 1) {
    instance.inputs.push_back(F32(Shape{}));
    instance.fill.push_back(OneOf({1.0, 8.0, 65536.0}));
  }
  return instance;
}

OpInstance LossScaleUpdate(Rng& rng) {
  OpInstance instance{"loss_scale_update",
                      Attrs{{"window", rng.UniformInt(1, 4)}, {"min_scale", 1.0}},
                      {F32(Shape{}), F32(Shape{}), F32(Shape{})},
                      {},
                      {}};
  instance.fill = {OneOf({1.0, 2.0, 1024.0}), OneOf({0.0, 1.0, 2.0, 3.0}),
                   OneOf({0.5, 3.0, kInf, std::numeric_limits<double>::quiet_NaN()})};
  instance.nan_signal_inputs = {1, 2};  // a count is never NaN; a NaN norm is an overflow
  return instance;
}

// Steps before, inside and after the warmup and the decay, for every decay.
OpInstance LrSchedule(Rng& rng) {
  const char* decays[] = {"constant", "linear", "cosine"};
  const double warmup = static_cast<double>(rng.UniformInt(0, 3));
  OpInstance instance{"lr_schedule",
                      Attrs{{"decay", std::string(decays[rng.UniformInt(0, 2)])},
                            {"warmup", warmup},
                            {"decay_steps", warmup + static_cast<double>(rng.UniformInt(1, 6))},
                            {"min_lr", rng.Uniform(0.0, 0.01)}},
                      {F32(Shape{}), F32(Shape{})},
                      {},
                      {}};
  instance.fill = {OneOf({0.0, 1.0, 2.0, 3.0, 5.0, 8.0, 20.0}), OneOf({0.1, 3e-4})};
  instance.nan_signal_inputs = {0};  // a step count is never NaN; past the decay it is not read
  return instance;
}

}  // namespace

std::vector<OpCase> GradControlCases() {
  return {{"sum_squares",
           [](Rng& rng) {
             return OpInstance{"sum_squares", {}, {F32(RandomDims(rng, 0, 3))}, {}, {}};
           },
           false},
          {"grad_factor", GradFactor, false},
          {"loss_scale_update", LossScaleUpdate, false},
          {"lr_schedule", LrSchedule, false}};
}

}  // namespace twinflow::testing
