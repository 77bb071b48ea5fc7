// CPU kernels of the misc family. Variable init, dropout and the causal mask depend on where
// each physical element sits in the logical tensor (KernelContext regions), so every layout
// of them, on any number of devices, computes the same logical values as one device.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/core/hash_random.h"
#include "kernels/cpu/kernel_families.h"
#include "kernels/cpu/kernel_helpers.h"
#include "kernels/cpu/update_kernels.h"

namespace twinflow::kernels {
namespace {

// The logical row-major index of each element of the physical tensor held at `region` of a
// logical tensor of `logical`, in physical row-major order. A missing region means "whole".
std::vector<int64_t> LogicalIndices(const Shape& physical, const std::vector<Region>& regions,
                                    const std::vector<Shape>& logical_shapes, size_t which,
                                    const std::string& op) {
  const Region region = which < regions.size() ? regions[which] : Region::Full(physical);
  const Shape logical = which < logical_shapes.size() ? logical_shapes[which] : physical;
  if (region.shape() != physical || region.rank() != logical.rank() ||
      !Region::Full(logical).Contains(region)) {
    throw ShapeError(op + ": physical " + physical.ToString() + " at " + region.ToString() +
                     " does not fit logical " + logical.ToString());
  }
  const std::vector<int64_t> strides = logical.Strides();
  std::vector<int64_t> out;
  out.reserve(physical.numel());
  const int rank = physical.rank();
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0, end = physical.numel(); n < end; ++n) {
    int64_t flat = 0;
    for (int d = 0; d < rank; ++d) flat += (region.ranges[d].begin + index[d]) * strides[d];
    out.push_back(flat);
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < physical[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

void Variable(const KernelContext& ctx) {
  CheckArity(ctx, 0, 1, "variable");
  Tensor& out = *ctx.outputs[0];
  const std::string init = ctx.attrs.Has("init") ? ctx.attrs.GetString("init") : "zeros";
  if (init == "zeros" || init == "ones" || init == "constant") {
    out.Fill(init == "constant" ? ctx.attrs.GetDouble("value") : init == "ones" ? 1.0 : 0.0);
    return;
  }
  const uint64_t seed = static_cast<uint64_t>(ctx.attrs.GetInt("seed", 0));
  const double std_dev = ctx.attrs.GetDouble("std", 1.0);
  const double scale = ctx.attrs.GetDouble("scale", 1.0);
  const std::vector<int64_t> index =
      LogicalIndices(out.shape(), ctx.output_regions, ctx.output_logical_shapes, 0, "variable");
  for (int64_t i = 0, end = out.numel(); i < end; ++i) {
    const uint64_t at = static_cast<uint64_t>(index[i]);
    if (init == "normal") {
      out.SetDouble(i, std_dev * HashNormal(seed, at));
    } else if (init == "uniform") {
      out.SetDouble(i, scale * (2 * HashUniform(seed, at) - 1));
    } else {
      throw InvalidArgumentError("variable: unknown init '" + init + "'");
    }
  }
}

void Fill(const KernelContext& ctx, double value) {
  CheckArity(ctx, 1, 1, "fill_like");
  ctx.outputs[0]->Fill(value);
}

void CausalMask(const KernelContext& ctx) {
  CheckArity(ctx, 1, 1, "causal_mask");
  Tensor& out = *ctx.outputs[0];
  const std::vector<int64_t> index =
      LogicalIndices(out.shape(), ctx.output_regions, ctx.output_logical_shapes, 0, "causal_mask");
  const Shape logical =
      ctx.output_logical_shapes.empty() ? out.shape() : ctx.output_logical_shapes[0];
  if (logical.rank() != 2)
    throw ShapeError("causal_mask: output " + logical.ToString() + " is not 2-D");
  const int64_t cols = logical[1];
  for (int64_t i = 0, end = out.numel(); i < end; ++i) {
    const int64_t row = index[i] / cols, col = index[i] % cols;
    out.SetDouble(i, col > row ? -1e9 : 0.0);
  }
}

template <typename T>
void Dropout(const KernelContext& ctx) {
  CheckArity(ctx, 1, 1, "dropout");
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  CheckShape(y, x.shape(), "dropout", "output");
  const double rate = ctx.attrs.GetDouble("rate");
  const uint64_t seed = static_cast<uint64_t>(ctx.attrs.GetInt("seed"));
  const std::vector<int64_t> index =
      LogicalIndices(y.shape(), ctx.output_regions, ctx.output_logical_shapes, 0, "dropout");
  const T keep_scale = static_cast<T>(1.0 / (1.0 - rate));
  const T* in = x.data<T>();
  T* out = y.data<T>();
  for (int64_t i = 0, end = y.numel(); i < end; ++i) {
    const bool keep = HashUniform(seed, static_cast<uint64_t>(index[i])) >= rate;
    // A dropped element is x * 0 (+0 for finite x), so a NaN or infinity is not dropped.
    out[i] = keep ? in[i] * keep_scale : in[i] * T(0) + T(0);
  }
}

// recompute_gate(x, after): x, once `after` exists (the runtime only launches it then).
void RecomputeGate(const KernelContext& ctx) {
  CheckMapsInput(ctx, 2, "recompute_gate");
  const Tensor& x = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  if (x.nbytes() > 0) std::memcpy(out.raw(), x.raw(), x.nbytes());
}

}  // namespace

void RegisterMiscKernels(KernelRegistry& registry) {
  RegisterCpu(registry, "variable", {DType::kF32, DType::kF64, DType::kI32, DType::kI64}, Variable);
  const std::initializer_list<DType> all = {DType::kF32, DType::kF64, DType::kI32, DType::kI64};
  RegisterCpu(registry, "fill_like", all,
              [](const KernelContext& ctx) { Fill(ctx, ctx.attrs.GetDouble("value")); });
  RegisterCpu(registry, "zeros_like", all, [](const KernelContext& ctx) { Fill(ctx, 0); });
  RegisterCpu(registry, "ones_like", all, [](const KernelContext& ctx) { Fill(ctx, 1); });
  RegisterCpu(registry, "causal_mask", {DType::kF32, DType::kF64}, CausalMask);
  // The interpreter (and later the runtime) performs the write; the kernel has no output.
  RegisterCpu(registry, "assign", all, [](const KernelContext&) {});
  registry.Register({"dropout", DeviceType::kCpu, DType::kF32}, Dropout<float>);
  registry.Register({"dropout", DeviceType::kCpu, DType::kF64}, Dropout<double>);
  RegisterCpu(registry, "recompute_gate", all, RecomputeGate);
  RegisterUpdateKernels(registry);
}

}  // namespace twinflow::kernels
