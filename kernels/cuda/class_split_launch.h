#pragma once
// Launchers of class_split_kernels.cu: the class-split cross-entropy pieces (f32 and bf16).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"

namespace twinflow::kernels::cuda {

// The labels and where this device's slice of the class axis sits: classes [begin, end) of
// the logical row, `width` of them held here.
struct LabelSlice {
  const void* labels = nullptr;
  bool is64 = false;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t width = 0;
};

// out[r] = logits[r, label - begin] when this slice holds the label, else 0.
void LaunchPickLabel(DType dtype, const void* logits, const LabelSlice& s, void* out, int64_t rows,
                     cudaStream_t stream);
// out[r, c] = dy[r] where c is the label's column in this slice, else 0.
void LaunchPickLabelGrad(DType dtype, const void* dy, const LabelSlice& s, void* out, int64_t rows,
                         cudaStream_t stream);
// out[r, c] = exp(logits[r, c] - m[r]).
void LaunchClassSplitExp(DType dtype, const void* logits, const void* m, void* out, int64_t rows,
                         int64_t width, cudaStream_t stream);
// dlogits = dy * e; dm[r] = -sum_c dy * e (one block per row).
void LaunchClassSplitExpGrad(DType dtype, const void* e, const void* dy, void* dlogits, void* dm,
                             int64_t rows, int64_t width, cudaStream_t stream);
// loss = log(s) + m - picked.
void LaunchClassSplitLoss(DType dtype, const void* s, const void* m, const void* picked, void* out,
                          int64_t n, cudaStream_t stream);
// ds = dy / s, dm = dy, dpicked = -dy.
void LaunchClassSplitLossGrad(DType dtype, const void* s, const void* dy, void* ds, void* dm,
                              void* dpicked, int64_t n, cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
