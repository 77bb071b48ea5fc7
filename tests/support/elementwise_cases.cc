// Random instances of the elementwise family: broadcasting pairs of rank 1..3 (e.g. [3,1,4] with
// [5,4]), bias_add on any axis, scalar ops, identity, cast and the broadcast gradient helpers.
#include <cmath>

#include "tests/support/case_helpers.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

// A shape that broadcasts to `full`: some leading axes dropped, some extents set to 1.
Shape Broadcastable(Rng& rng, const Shape& full) {
  const int drop = static_cast<int>(rng.UniformInt(0, full.rank() - 1));
  std::vector<int64_t> dims;
  for (int d = drop; d < full.rank(); ++d) dims.push_back(rng.UniformInt(0, 2) == 0 ? 1 : full[d]);
  return Shape(dims);
}

// Values in [lo, hi) with a random sign when `signed_values`.
std::function<Tensor(Rng&)> Fill(Shape shape, DType dtype, double lo, double hi,
                                 bool signed_values) {
  return [=](Rng& rng) {
    Tensor t(shape, dtype);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = rng.Uniform(lo, hi);
      t.SetDouble(i, signed_values && rng.UniformInt(0, 1) ? -v : v);
    }
    return t;
  };
}

// Float dtypes only: the shared gradient check needs a floating output. Integer kernels and
// rules are checked in tests/unit/elementwise_ops_test.cc.
DType RandomFloat(Rng& rng) { return rng.UniformInt(0, 3) == 0 ? DType::kF64 : DType::kF32; }

OpInstance DrawBinary(Rng& rng, const std::string& type) {
  const Shape full = RandomShape(rng, static_cast<int>(rng.UniformInt(1, 3)));
  Shape a = Broadcastable(rng, full), b = Broadcastable(rng, full);
  if (rng.UniformInt(0, 1)) std::swap(a, b);
  if (rng.UniformInt(0, 3) == 0) a = full;
  const DType dtype = type == "div" ? DType::kF32 : RandomFloat(rng);
  OpInstance instance{type, {}, {{a, dtype}, {b, dtype}}, {}, {}};
  // Denominators away from zero, so that finite differences and partial sums stay tame.
  if (type == "div") instance.fill = {nullptr, Fill(b, dtype, 0.5, 2.0, true)};
  return instance;
}

OpInstance DrawBiasAdd(Rng& rng, bool grad) {
  const int rank = static_cast<int>(rng.UniformInt(1, 3));
  const Shape x = RandomShape(rng, rank);
  const int64_t axis = rng.UniformInt(-rank, rank - 1);
  const int positive_axis = static_cast<int>(axis < 0 ? axis + rank : axis);
  const DType dtype = RandomFloat(rng);
  OpInstance instance{
      grad ? "bias_add_grad" : "bias_add", Attrs{{"axis", axis}}, {{x, dtype}}, {}, {}};
  if (!grad) instance.inputs.push_back({Shape{x[positive_axis]}, dtype});
  return instance;
}

OpInstance DrawScalar(Rng& rng, const std::string& type) {
  const Shape x = RandomShape(rng, static_cast<int>(rng.UniformInt(1, 3)));
  const DType dtype = RandomFloat(rng);
  OpInstance instance{type, {}, {{x, dtype}}, {}, {}};
  if (type == "scalar_pow") {
    constexpr double kExponents[] = {2.0, 3.0, 0.5, -1.0, 1.5, 0.0};
    instance.attrs.Set("exponent", kExponents[rng.UniformInt(0, 5)]);
    instance.fill = {Fill(x, dtype, 0.5, 2.0, false)};  // x^e defined for x > 0
  } else if (type != "identity") {
    const double value = rng.UniformInt(0, 1) ? std::round(rng.Uniform(-4, 4)) : rng.Uniform(-3, 3);
    instance.attrs.Set("value", value);
  }
  return instance;
}

// Float targets only (see RandomFloat); bf16 sources would make finite differences meaningless.
OpInstance DrawCast(Rng& rng) {
  const Shape x = RandomShape(rng, static_cast<int>(rng.UniformInt(1, 3)));
  constexpr DType kFrom[] = {DType::kF32, DType::kF64, DType::kI32, DType::kI64};
  const DType from = kFrom[rng.UniformInt(0, 3)];
  const DType to = rng.UniformInt(0, 1) ? DType::kF32 : DType::kF64;
  return OpInstance{"cast", Attrs{{"dtype", std::string(DTypeName(to))}}, {{x, from}}, {}, {}};
}

// reduce_sum_like(dy, like) with like broadcastable to dy; broadcast_like(x, like) the reverse.
OpInstance DrawLike(Rng& rng, bool reduce) {
  const Shape full = RandomShape(rng, static_cast<int>(rng.UniformInt(1, 3)));
  const Shape small = Broadcastable(rng, full);
  const DType dtype = RandomFloat(rng);
  OpInstance instance{reduce ? "reduce_sum_like" : "broadcast_like",
                      {},
                      {{reduce ? full : small, dtype}, {reduce ? small : full, dtype}},
                      {},
                      {}};
  instance.non_differentiable_inputs = {1};  // only the reference's shape is used
  return instance;
}

}  // namespace

std::vector<OpCase> ElementwiseCases() {
  std::vector<OpCase> cases;
  for (const char* type : {"add", "sub", "mul", "div"}) {
    const std::string name = type;
    cases.push_back({name, [name](Rng& rng) { return DrawBinary(rng, name); }});
  }
  cases.push_back({"bias_add", [](Rng& rng) { return DrawBiasAdd(rng, false); }});
  cases.push_back({"bias_add_grad", [](Rng& rng) { return DrawBiasAdd(rng, true); }});
  for (const char* type : {"scalar_add", "scalar_mul", "scalar_pow", "identity"}) {
    const std::string name = type;
    cases.push_back({name, [name](Rng& rng) { return DrawScalar(rng, name); }});
  }
  cases.push_back({"cast", DrawCast});
  cases.push_back({"reduce_sum_like", [](Rng& rng) { return DrawLike(rng, true); }});
  cases.push_back({"broadcast_like", [](Rng& rng) { return DrawLike(rng, false); }});
  return cases;
}

}  // namespace twinflow::testing
