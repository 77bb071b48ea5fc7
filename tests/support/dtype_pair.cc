#include "tests/support/dtype_pair.h"

#include <algorithm>
#include <cmath>

namespace twinflow::testing {
namespace {

Tensor Converted(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out(t.shape(), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) out.SetDouble(i, t.GetDouble(i));
  return out;
}

double RoundedTo(double value, DType dtype) {
  if (dtype == DType::kF16) return F16ToFloat(FloatToF16(static_cast<float>(value)));
  if (dtype == DType::kBF16) return BF16ToFloat(FloatToBF16(static_cast<float>(value)));
  return value;
}

struct Tolerance {
  double rtol;
  double atol;  // of the output's largest finite magnitude
};

// f32: a device accumulates in another order, with FMA and its own transcendental functions,
// so only the last bits differ. bf16 and f16: the output's own rounding (2^-9 and 2^-12
// relative) on top of f32 accumulation in another order, and the rounding of the inputs of
// ops that feed a kernel one value computed from another (a GPU's fused kernels).
Tolerance ToleranceOf(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return {1.6e-2, 1e-2};
    case DType::kF16:
      return {4e-3, 2e-3};
    default:
      return {2e-5, 2e-5};
  }
}

}  // namespace

OpInstance WithFloatDType(const OpInstance& instance, DType dtype) {
  OpInstance out = instance;
  for (size_t i = 0; i < out.inputs.size(); ++i) {
    const bool f32 = std::count(out.f32_inputs.begin(), out.f32_inputs.end(), i) > 0;
    if (IsFloating(out.inputs[i].dtype) && !f32) out.inputs[i].dtype = dtype;
  }
  if (out.attrs.Has("dtype") && IsFloating(ParseDType(out.attrs.GetString("dtype")))) {
    out.attrs.Set("dtype", std::string(DTypeName(dtype)));
  }
  return out;
}

PairedInstance Pair(const OpInstance& instance, DType dtype, Rng& rng) {
  PairedInstance p;
  p.dtype = dtype;
  p.cpu = WithFloatDType(instance, DType::kF32);
  p.gpu = WithFloatDType(instance, dtype);
  for (size_t i = 0; i < instance.inputs.size(); ++i) {
    const Tensor filled = FillInput(instance, static_cast<int>(i), rng);
    p.gpu_inputs.push_back(Converted(filled, p.gpu.inputs[i].dtype));
    p.cpu_inputs.push_back(Converted(p.gpu_inputs.back(), p.cpu.inputs[i].dtype));
  }
  return p;
}

std::vector<graph::TensorMeta> PairedOutputMetas(std::vector<graph::TensorMeta> metas,
                                                 const PairedInstance& paired) {
  const std::vector<int>& f32 = paired.gpu.f32_outputs;
  for (size_t o = 0; o < metas.size(); ++o) {
    if (IsFloating(metas[o].dtype) && !std::count(f32.begin(), f32.end(), o)) {
      metas[o].dtype = paired.dtype;
    }
  }
  return metas;
}

std::string CompareWithTolerance(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                 DType dtype) {
  if (got.size() != want.size()) return "output count differs";
  const Tolerance tol = ToleranceOf(dtype);
  for (size_t o = 0; o < got.size(); ++o) {
    if (got[o].shape() != want[o].shape()) return "output " + std::to_string(o) + " shape differs";
    double magnitude = 1.0;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      const double v = std::fabs(want[o].GetDouble(i));
      if (std::isfinite(v)) magnitude = std::max(magnitude, v);
    }
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      const double g = got[o].GetDouble(i);
      // A reference value beyond the type's range (f16's 65504) is infinite in that type.
      const double w = RoundedTo(want[o].GetDouble(i), got[o].dtype());
      const bool exact = !IsFloating(want[o].dtype()) || !std::isfinite(w);
      const bool ok = exact ? (g == w || (std::isnan(g) && std::isnan(w)))
                            : std::fabs(g - w) <= tol.rtol * std::fabs(w) + tol.atol * magnitude;
      if (!ok) {
        return "output " + std::to_string(o) + " element " + std::to_string(i) + ": got " +
               std::to_string(g) + ", reference " + std::to_string(w);
      }
    }
  }
  return "";
}

}  // namespace twinflow::testing
