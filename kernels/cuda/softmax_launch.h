#pragma once
// Launchers of softmax_kernels.cu: row kernels (one block per row, f32 and bf16) for softmax,
// log_softmax, their gradients and the fused sparse softmax cross entropy; and the check of
// index tensors that raises the env's error flag.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"

namespace twinflow::kernels::cuda {

// A tensor seen as [outer, n, inner] around the softmax axis: rows = outer * inner rows of n
// elements at stride inner.
struct RowView {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

// softmax's fusion (kernels/cpu/softmax_checks.h SoftmaxFusion): the input's scale, and for a
// causal mask the rows of each matrix (0: no mask).
struct SoftmaxFusionArgs {
  double scale = 1;
  int64_t query_rows = 0;
};

void LaunchSoftmax(bool log, DType dtype, const void* x, void* y, const RowView& v,
                   const SoftmaxFusionArgs& fusion, cudaStream_t stream);
// softmax_grad's dx carries the fused softmax's `scale` (1 for log_softmax_grad).
void LaunchSoftmaxGrad(bool log, DType dtype, const void* y, const void* dy, void* dx,
                       const RowView& v, double scale, cudaStream_t stream);

// Loss per row (dloss null) or its gradient [rows, classes] (dloss per row). A row whose label
// is out of range gets NaN (the fault itself is raised by LaunchCheckIndices).
void LaunchSparseXent(DType dtype, const void* logits, const void* labels, bool labels64,
                      const void* dloss, void* out, int64_t rows, int64_t classes,
                      cudaStream_t stream);

// Raises `code` in `flag` if any of the n indices lies outside [0, limit).
void LaunchCheckIndices(const void* indices, bool is64, int64_t n, int64_t limit, int* flag,
                        int code, cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
