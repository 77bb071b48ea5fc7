// CPU kernels of the softmax family: softmax, log_softmax, their gradients, and the fused
// sparse_softmax_cross_entropy with its gradient. Rows are computed in double, in index order.
#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_families.h"
#include "kernels/cpu/kernel_helpers.h"
#include "kernels/cpu/softmax_checks.h"

namespace twinflow::kernels {
namespace {

template <typename T>
void SoftmaxKernel(const KernelContext& ctx, bool log, const char* op) {
  const AxisView v = CheckSoftmax(ctx, op);
  const SoftmaxFusion f = FusionOf(ctx, v, op);
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  const T* in = x.data<T>();
  T* out = y.data<T>();
  for (int64_t o = 0; o < v.outer; ++o) {
    // Keys [0, kept) take part; a causal row's later keys get exactly 0.
    const int64_t kept = f.causal ? o % f.query_rows + 1 : v.n;
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t base = o * v.n * v.inner + i;
      auto z = [&](int64_t j) { return f.scale * static_cast<double>(in[base + j * v.inner]); };
      double max = -INFINITY;
      for (int64_t j = 0; j < kept; ++j) max = std::fmax(max, z(j));
      double sum = 0;
      for (int64_t j = 0; j < kept; ++j) sum += std::exp(z(j) - max);
      const double log_sum = std::log(sum);
      for (int64_t j = 0; j < v.n; ++j) {
        const double d = z(j) - max;
        const double value = j >= kept ? 0.0 : log ? d - log_sum : std::exp(d) / sum;
        out[base + j * v.inner] = static_cast<T>(value);
      }
    }
  }
}

template <typename T>
void SoftmaxGradKernel(const KernelContext& ctx, bool log, const char* op) {
  const AxisView v = CheckSoftmaxGrad(ctx, op);
  const double scale = FusionOf(ctx, v, op).scale;
  const Tensor& y = *ctx.inputs[0];
  const Tensor& dy = *ctx.inputs[1];
  Tensor& dx = *ctx.outputs[0];
  const T* ys = y.data<T>();
  const T* dys = dy.data<T>();
  T* out = dx.data<T>();
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t base = o * v.n * v.inner + i;
      double acc = 0;  // softmax: sum(dy * y); log_softmax: sum(dy)
      for (int64_t j = 0; j < v.n; ++j) {
        const int64_t k = base + j * v.inner;
        acc += log ? static_cast<double>(dys[k]) : static_cast<double>(dys[k]) * ys[k];
      }
      for (int64_t j = 0; j < v.n; ++j) {
        const int64_t k = base + j * v.inner;
        out[k] = static_cast<T>(log ? dys[k] - std::exp(static_cast<double>(ys[k])) * acc
                                    : scale * ys[k] * (dys[k] - acc));
      }
    }
  }
}

template <typename T>
void SparseXentKernel(const KernelContext& ctx, bool grad) {
  const char* op = grad ? "sparse_softmax_cross_entropy_grad" : "sparse_softmax_cross_entropy";
  const auto [rows, classes] = CheckSparseXent(ctx, grad, op);
  const Tensor& labels = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  const T* x = ctx.inputs[0]->data<T>();
  T* o = out.data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t label = IndexAt(labels, r);
    CheckIndexValue(label, classes, op, "label");
    const T* row = x + r * classes;
    double max = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) max = std::fmax(max, row[c]);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(row[c] - max);
    if (!grad) {
      o[r] = static_cast<T>(std::log(sum) + max - row[label]);
      continue;
    }
    const double dloss = ctx.inputs[2]->data<T>()[r];
    for (int64_t c = 0; c < classes; ++c) {
      const double p = std::exp(row[c] - max) / sum;
      o[r * classes + c] = static_cast<T>((p - (c == label ? 1.0 : 0.0)) * dloss);
    }
  }
}

template <typename T>
void RegisterFor(KernelRegistry& registry, DType dtype) {
  registry.Register({"softmax", DeviceType::kCpu, dtype},
                    [](const KernelContext& ctx) { SoftmaxKernel<T>(ctx, false, "softmax"); });
  registry.Register({"log_softmax", DeviceType::kCpu, dtype},
                    [](const KernelContext& ctx) { SoftmaxKernel<T>(ctx, true, "log_softmax"); });
  registry.Register({"softmax_grad", DeviceType::kCpu, dtype}, [](const KernelContext& ctx) {
    SoftmaxGradKernel<T>(ctx, false, "softmax_grad");
  });
  registry.Register({"log_softmax_grad", DeviceType::kCpu, dtype}, [](const KernelContext& ctx) {
    SoftmaxGradKernel<T>(ctx, true, "log_softmax_grad");
  });
  registry.Register({"sparse_softmax_cross_entropy", DeviceType::kCpu, dtype},
                    [](const KernelContext& ctx) { SparseXentKernel<T>(ctx, false); });
  registry.Register({"sparse_softmax_cross_entropy_grad", DeviceType::kCpu, dtype},
                    [](const KernelContext& ctx) { SparseXentKernel<T>(ctx, true); });
}

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry& registry) {
  RegisterFor<float>(registry, DType::kF32);
  RegisterFor<double>(registry, DType::kF64);
  RegisterSparseXentClassSplitKernels(registry);
}

}  // namespace twinflow::kernels
