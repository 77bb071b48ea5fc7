// CPU reference kernels of fused_attention and fused_attention_grad (engine/ops/
// fused_attention_ops.cc). One query row at a time: its scores live in a buffer of one row
// (O(sequence) memory, never [seq, seq]), and only the row's log-sum-exp is saved for the
// gradient, which recomputes the probabilities from it. Every sum runs in index order, so
// results are bit-identical across runs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention_shape.h"
#include "kernels/cpu/kernel_families.h"
#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
namespace {

template <typename T>
T Dot(const T* a, const T* b, int64_t n) {
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

template <typename T>
void Axpy(T alpha, const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// One query row of one head: out = softmax(scores) v, returning the row's log-sum-exp.
template <typename T>
T ForwardRow(const AttentionShape& a, const T* q_row, const T* k, const T* v, int64_t b, int64_t h,
             int64_t end, std::vector<T>& scores, T* out_row) {
  std::fill(out_row, out_row + a.head_dim, T{0});
  if (end == 0) return -std::numeric_limits<T>::infinity();
  T max = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < end; ++j) {
    scores[j] = Dot(q_row, k + a.KvRow(b, j, h), a.head_dim) * static_cast<T>(a.scale);
    max = std::max(max, scores[j]);
  }
  double sum = 0;
  for (int64_t j = 0; j < end; ++j) {
    scores[j] = std::exp(scores[j] - max);
    sum += scores[j];
  }
  for (int64_t j = 0; j < end; ++j) Axpy(scores[j], v + a.KvRow(b, j, h), out_row, a.head_dim);
  const T inv = static_cast<T>(1.0 / sum);
  for (int64_t c = 0; c < a.head_dim; ++c) out_row[c] *= inv;
  return max + static_cast<T>(std::log(sum));
}

template <typename T>
void FusedAttentionKernel(const KernelContext& ctx) {
  const AttentionShape a = CheckAttentionForward(ctx);
  const T* q = ctx.inputs[0]->data<T>();
  const T* k = ctx.inputs[1]->data<T>();
  const T* v = ctx.inputs[2]->data<T>();
  T* out = ctx.outputs[0]->data<T>();
  T* lse = ctx.outputs[1]->data<T>();
  std::vector<T> scores(a.kv_len);
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      for (int64_t i = 0; i < a.q_len; ++i) {
        const int64_t row = a.Row(b, i, a.q_len, h);
        lse[a.LseIndex(b, h, i)] =
            ForwardRow(a, q + row, k, v, b, h, a.KeyEnd(i), scores, out + row);
      }
    }
  }
}

// The tensors of the gradient kernel, as pointers into q's layout.
template <typename T>
struct GradTensors {
  const T *q, *k, *v, *out, *lse, *dout;
  const T* dlse;  // null when the op has no dlse input
  T *dq, *dk, *dv;
};

// One query row of one head: with p = exp(s - lse) and ds = p (dout.v - dout.out + dlse),
// dq_i = scale sum_j ds_j k_j, dk_j += scale ds_j q_i, dv_j += p_j dout_i.
template <typename T>
void BackwardRow(const AttentionShape& a, const GradTensors<T>& t, int64_t b, int64_t h,
                 int64_t i) {
  const int64_t row = a.Row(b, i, a.q_len, h);
  const T* q_row = t.q + row;
  const T* dout_row = t.dout + row;
  T* dq_row = t.dq + row;
  const T lse = t.lse[a.LseIndex(b, h, i)];
  const T delta =
      Dot(dout_row, t.out + row, a.head_dim) - (t.dlse ? t.dlse[a.LseIndex(b, h, i)] : T{0});
  const T scale = static_cast<T>(a.scale);
  for (int64_t j = 0, end = a.KeyEnd(i); j < end; ++j) {
    const int64_t key = a.KvRow(b, j, h);
    const T p = std::exp(Dot(q_row, t.k + key, a.head_dim) * scale - lse);
    const T ds = p * (Dot(dout_row, t.v + key, a.head_dim) - delta) * scale;
    Axpy(ds, t.k + key, dq_row, a.head_dim);
    Axpy(ds, q_row, t.dk + key, a.head_dim);
    Axpy(p, dout_row, t.dv + key, a.head_dim);
  }
}

template <typename T>
void FusedAttentionGradKernel(const KernelContext& ctx) {
  const AttentionShape a = CheckAttentionGrad(ctx);
  const bool with_dlse = ctx.inputs.size() == 7;
  for (Tensor* grad : ctx.outputs) grad->Fill(0);
  const GradTensors<T> t{ctx.inputs[0]->data<T>(),
                         ctx.inputs[1]->data<T>(),
                         ctx.inputs[2]->data<T>(),
                         ctx.inputs[3]->data<T>(),
                         ctx.inputs[4]->data<T>(),
                         ctx.inputs[5]->data<T>(),
                         with_dlse ? ctx.inputs[6]->data<T>() : nullptr,
                         ctx.outputs[0]->data<T>(),
                         ctx.outputs[1]->data<T>(),
                         ctx.outputs[2]->data<T>()};
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      for (int64_t i = 0; i < a.q_len; ++i) BackwardRow(a, t, b, h, i);
    }
  }
}

}  // namespace

void RegisterFusedAttentionKernels(KernelRegistry& registry) {
  RegisterCpu(registry, "fused_attention", {DType::kF32}, FusedAttentionKernel<float>);
  RegisterCpu(registry, "fused_attention", {DType::kF64}, FusedAttentionKernel<double>);
  RegisterCpu(registry, "fused_attention_grad", {DType::kF32}, FusedAttentionGradKernel<float>);
  RegisterCpu(registry, "fused_attention_grad", {DType::kF64}, FusedAttentionGradKernel<double>);
}

}  // namespace twinflow::kernels
