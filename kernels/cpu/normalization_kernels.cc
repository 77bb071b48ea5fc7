// CPU kernels of layer_norm, rms_norm and their gradients. Row statistics are computed in
// double in index order (layer_norm: two passes, mean then centred variance).
#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_families.h"
#include "kernels/cpu/kernel_helpers.h"
#include "kernels/cpu/normalization_checks.h"

namespace twinflow::kernels {
namespace {

// Mean and 1/sqrt(var + epsilon) of one row.
template <typename T>
std::pair<double, double> RowStats(const T* row, int64_t width, double epsilon) {
  double mean = 0;
  for (int64_t j = 0; j < width; ++j) mean += row[j];
  mean /= static_cast<double>(width);
  double var = 0;
  for (int64_t j = 0; j < width; ++j) var += (row[j] - mean) * (row[j] - mean);
  var /= static_cast<double>(width);
  return {mean, 1.0 / std::sqrt(var + epsilon)};
}

template <typename T>
void LayerNorm(const KernelContext& ctx) {
  const LayerNormRows rows = CheckLayerNorm(ctx);
  const double epsilon = ctx.attrs.GetDouble("epsilon", 1e-5);
  const T* x = ctx.inputs[0]->data<T>();
  const T* gamma = ctx.inputs[1]->data<T>();
  const T* beta = ctx.inputs[2]->data<T>();
  T* y = ctx.outputs[0]->data<T>();
  for (int64_t r = 0; r < rows.count; ++r) {
    const T* row = x + r * rows.width;
    const auto [mean, inv] = RowStats(row, rows.width, epsilon);
    for (int64_t j = 0; j < rows.width; ++j) {
      y[r * rows.width + j] = static_cast<T>((row[j] - mean) * inv * gamma[j] + beta[j]);
    }
  }
}

template <typename T>
void LayerNormGrad(const KernelContext& ctx) {
  const LayerNormRows rows = CheckLayerNormGrad(ctx);
  const Tensor& x = *ctx.inputs[0];
  const double epsilon = ctx.attrs.GetDouble("epsilon", 1e-5);
  const T* xs = x.data<T>();
  const T* gamma = ctx.inputs[1]->data<T>();
  const T* dy = ctx.inputs[2]->data<T>();
  T* dx = ctx.outputs[0]->data<T>();
  std::vector<double> dgamma(rows.width, 0.0);
  std::vector<double> dbeta(rows.width, 0.0);
  std::vector<double> xhat(rows.width);
  for (int64_t r = 0; r < rows.count; ++r) {
    const T* row = xs + r * rows.width;
    const T* g = dy + r * rows.width;
    const auto [mean, inv] = RowStats(row, rows.width, epsilon);
    double mean_g = 0;
    double mean_gx = 0;
    for (int64_t j = 0; j < rows.width; ++j) {
      xhat[j] = (row[j] - mean) * inv;
      const double gj = static_cast<double>(g[j]) * gamma[j];
      mean_g += gj;
      mean_gx += gj * xhat[j];
      dgamma[j] += static_cast<double>(g[j]) * xhat[j];
      dbeta[j] += g[j];
    }
    mean_g /= static_cast<double>(rows.width);
    mean_gx /= static_cast<double>(rows.width);
    for (int64_t j = 0; j < rows.width; ++j) {
      const double gj = static_cast<double>(g[j]) * gamma[j];
      dx[r * rows.width + j] = static_cast<T>(inv * (gj - mean_g - xhat[j] * mean_gx));
    }
  }
  for (int64_t j = 0; j < rows.width; ++j) {
    ctx.outputs[1]->data<T>()[j] = static_cast<T>(dgamma[j]);
    ctx.outputs[2]->data<T>()[j] = static_cast<T>(dbeta[j]);
  }
}

// 1/sqrt(mean(x^2) + epsilon) of one row.
template <typename T>
double InverseRms(const T* row, int64_t width, double epsilon) {
  double squares = 0;
  for (int64_t j = 0; j < width; ++j) squares += static_cast<double>(row[j]) * row[j];
  return 1.0 / std::sqrt(squares / static_cast<double>(width) + epsilon);
}

template <typename T>
void RmsNorm(const KernelContext& ctx) {
  const LayerNormRows rows = CheckRmsNorm(ctx);
  const double epsilon = ctx.attrs.GetDouble("epsilon", 1e-5);
  const T* x = ctx.inputs[0]->data<T>();
  const T* gamma = ctx.inputs[1]->data<T>();
  T* y = ctx.outputs[0]->data<T>();
  for (int64_t r = 0; r < rows.count; ++r) {
    const T* row = x + r * rows.width;
    const double inv = InverseRms(row, rows.width, epsilon);
    for (int64_t j = 0; j < rows.width; ++j) {
      y[r * rows.width + j] = static_cast<T>(row[j] * inv * gamma[j]);
    }
  }
}

template <typename T>
void RmsNormGrad(const KernelContext& ctx) {
  const LayerNormRows rows = CheckRmsNormGrad(ctx);
  const double epsilon = ctx.attrs.GetDouble("epsilon", 1e-5);
  const T* xs = ctx.inputs[0]->data<T>();
  const T* gamma = ctx.inputs[1]->data<T>();
  const T* dy = ctx.inputs[2]->data<T>();
  T* dx = ctx.outputs[0]->data<T>();
  std::vector<double> dgamma(rows.width, 0.0);
  for (int64_t r = 0; r < rows.count; ++r) {
    const T* row = xs + r * rows.width;
    const T* g = dy + r * rows.width;
    const double inv = InverseRms(row, rows.width, epsilon);
    double mean_gx = 0;
    for (int64_t j = 0; j < rows.width; ++j) {
      const double xhat = row[j] * inv;
      mean_gx += static_cast<double>(g[j]) * gamma[j] * xhat;
      dgamma[j] += static_cast<double>(g[j]) * xhat;
    }
    mean_gx /= static_cast<double>(rows.width);
    for (int64_t j = 0; j < rows.width; ++j) {
      const double gj = static_cast<double>(g[j]) * gamma[j];
      dx[r * rows.width + j] = static_cast<T>(inv * (gj - row[j] * inv * mean_gx));
    }
  }
  for (int64_t j = 0; j < rows.width; ++j) {
    ctx.outputs[1]->data<T>()[j] = static_cast<T>(dgamma[j]);
  }
}

template <typename T>
void RegisterFor(KernelRegistry& registry, DType dtype) {
  registry.Register({"layer_norm", DeviceType::kCpu, dtype}, LayerNorm<T>);
  registry.Register({"layer_norm_grad", DeviceType::kCpu, dtype}, LayerNormGrad<T>);
  registry.Register({"rms_norm", DeviceType::kCpu, dtype}, RmsNorm<T>);
  registry.Register({"rms_norm_grad", DeviceType::kCpu, dtype}, RmsNormGrad<T>);
}

}  // namespace

void RegisterNormalizationKernels(KernelRegistry& registry) {
  RegisterFor<float>(registry, DType::kF32);
  RegisterFor<double>(registry, DType::kF64);
}

}  // namespace twinflow::kernels
