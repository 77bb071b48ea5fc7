// Random instances of the misc ops: source ops, constants, assign, dropout, optimizer updates.
#include <cmath>

#include "tests/support/case_helpers.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

using graph::TensorMeta;

OpInstance Unary(const std::string& type, Attrs attrs, Rng& rng) {
  return OpInstance{type, std::move(attrs), {F32(RandomDims(rng, 0, 3))}, {}, {}};
}

OpInstance Source(const std::string& type, Rng& rng) {
  Attrs attrs{{"shape", RandomDims(rng, 0, 3)}, {"dtype", std::string("f32")}};
  if (type == "variable") {
    const char* inits[] = {"normal", "uniform", "zeros", "ones", "normal"};
    attrs.Set("init", std::string(inits[rng.UniformInt(0, 4)]));
    attrs.Set("std", rng.Uniform(0.01, 2.0));
    attrs.Set("scale", rng.Uniform(0.01, 2.0));
    attrs.Set("seed", rng.UniformInt(0, 1000000));
  }
  return OpInstance{type, attrs, {}, {}, {}};
}

OpInstance CausalMask(Rng& rng) {
  std::vector<int64_t> dims = RandomDims(rng, 0, 2);
  const int64_t s = rng.UniformInt(1, 7);
  dims.push_back(s);
  dims.push_back(s);
  return OpInstance{"causal_mask", {}, {F32(dims)}, {}, {}};
}

// One time in two, the optional gradient factor as the last input: a scale, or NaN (the
// update is skipped).
OpInstance WithFactor(OpInstance instance, Rng& rng) {
  if (rng.UniformInt(0, 1) == 0) return instance;
  instance.fill.resize(instance.inputs.size());
  instance.nan_signal_inputs.push_back(static_cast<int>(instance.inputs.size()));
  instance.inputs.push_back(F32(Shape{}));
  const bool skip = rng.UniformInt(0, 2) == 0;
  instance.fill.push_back([skip](Rng& r) {
    Tensor t(Shape{}, DType::kF32);
    t.SetDouble(0, skip ? std::nan("") : r.Uniform(0.1, 2.0));
    return t;
  });
  return instance;
}

// One time in two, the learning rate as an input after the tensors (attr lr_input).
OpInstance WithLrInput(OpInstance instance, Rng& rng) {
  if (rng.UniformInt(0, 1) == 0) return instance;
  instance.attrs.Set("lr_input", true);
  instance.fill.resize(instance.inputs.size());
  instance.inputs.push_back(F32(Shape{}));
  instance.fill.push_back([](Rng& r) {
    Tensor t(Shape{}, DType::kF32);
    t.SetDouble(0, r.Uniform(0.0, 0.5));
    return t;
  });
  return instance;
}

// Inputs all shaped like one parameter; Adam's second moment is non-negative.
OpInstance Update(const std::string& type, Rng& rng) {
  const TensorMeta meta = F32(RandomDims(rng, 0, 3));
  Attrs attrs{{"lr", rng.Uniform(0.001, 0.5)}, {"weight_decay", rng.Uniform(0.0, 0.1)}};
  OpInstance instance{type, attrs, {meta, meta}, {}, {}};
  if (type == "sgd_momentum_update") {
    instance.attrs.Set("momentum", rng.Uniform(0.0, 0.99));
    instance.inputs.push_back(meta);
  } else if (type == "adam_update") {
    instance.attrs.Set("beta1", 0.9);
    instance.attrs.Set("beta2", 0.999);
    instance.attrs.Set("epsilon", 1e-6);
    instance.attrs.Set("decoupled", rng.UniformInt(0, 1) == 1);
    instance.inputs.push_back(meta);
    instance.inputs.push_back(meta);
    instance.inputs.push_back(F32(Shape{}));
    instance.fill.resize(5);
    instance.fill[3] = [meta](Rng& r) {
      Tensor t = Tensor::Random(meta.shape, DType::kF32, r);
      for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, std::fabs(t.GetDouble(i)));
      return t;
    };
    instance.fill[4] = [](Rng& r) {
      Tensor t(Shape{}, DType::kF32);
      t.SetDouble(0, static_cast<double>(r.UniformInt(0, 20)));
      return t;
    };
  }
  return WithFactor(WithLrInput(std::move(instance), rng), rng);
}

OpInstance StepIncrement(Rng& rng) {
  OpInstance instance{"step_increment", {}, {F32(Shape{})}, {}, {}};
  if (rng.UniformInt(0, 1) == 1) instance.inputs[0] = F32(Shape{1});
  return WithFactor(std::move(instance), rng);
}

}  // namespace

std::vector<OpCase> MiscCases() {
  std::vector<OpCase> cases;
  // `input` has no case: it has no kernel, executors feed it.
  cases.push_back({"variable", [](Rng& rng) { return Source("variable", rng); }, false});
  cases.push_back({"fill_like", [](Rng& rng) {
                     return Unary("fill_like", {{"value", rng.Uniform(-3, 3)}}, rng);
                   }});
  cases.push_back({"zeros_like", [](Rng& rng) { return Unary("zeros_like", {}, rng); }});
  cases.push_back({"ones_like", [](Rng& rng) { return Unary("ones_like", {}, rng); }});
  cases.push_back({"causal_mask", CausalMask});
  cases.push_back({"assign",
                   [](Rng& rng) {
                     const TensorMeta meta = F32(RandomDims(rng, 0, 3));
                     return OpInstance{"assign", {}, {meta, meta}, {}, {}};
                   },
                   false});
  cases.push_back(
      {"dropout", [](Rng& rng) {
         const double rates[] = {0.0, 0.25, 0.5, 0.8};
         return Unary("dropout",
                      {{"rate", rates[rng.UniformInt(0, 3)]}, {"seed", rng.UniformInt(0, 1000000)}},
                      rng);
       }});
  for (const char* type : {"sgd_update", "sgd_momentum_update", "adam_update"}) {
    cases.push_back({type, [type](Rng& rng) { return Update(type, rng); }, false});
  }
  cases.push_back({"step_increment", StepIncrement, false});
  cases.push_back({"recompute_gate",
                   [](Rng& rng) {
                     return OpInstance{"recompute_gate",
                                       {},
                                       {F32(RandomDims(rng, 0, 3)), F32(RandomDims(rng, 0, 3))},
                                       {},
                                       {}};
                   },
                   false});
  return cases;
}

}  // namespace twinflow::testing
