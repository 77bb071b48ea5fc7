#pragma once
// Argument checks and row views of the softmax kernels (softmax, log_softmax, their gradients,
// sparse_softmax_cross_entropy(_grad)), shared by the CPU kernels and the CUDA host side so
// both devices accept the same tensors, see the same rows and throw the same errors.
#include <cstdint>

#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {

// softmax's fused form (engine/ops/softmax_ops.cc): y = softmax(scale * x), with each
// [..., S, S] matrix's keys after its query masked (y = 0) when causal. Rows are the view's
// outer rows (axis -1), row r being query r % query_rows of its matrix.
struct SoftmaxFusion {
  double scale = 1;
  bool causal = false;
  int64_t query_rows = 0;  // S when causal
};
// The fusion attrs of softmax (scale, causal) or softmax_grad (scale), checked against `v`.
SoftmaxFusion FusionOf(const KernelContext& ctx, const AxisView& v, const char* op);

// softmax / log_softmax (x) -> y: returns x viewed around attr axis.
AxisView CheckSoftmax(const KernelContext& ctx, const char* op);
// softmax_grad / log_softmax_grad (y, dy) -> dx: returns y viewed around attr axis.
AxisView CheckSoftmaxGrad(const KernelContext& ctx, const char* op);

// logits [rows..., classes] as rows of classes.
struct XentRows {
  int64_t rows = 0;
  int64_t classes = 0;
};
// sparse_softmax_cross_entropy(logits, labels) -> loss [rows...], or with `grad`
// (logits, labels, dloss) -> dlogits.
XentRows CheckSparseXent(const KernelContext& ctx, bool grad, const char* op);

}  // namespace twinflow::kernels
