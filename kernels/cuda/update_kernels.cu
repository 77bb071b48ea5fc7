// Device code of the optimizer updates: one thread per parameter element.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/update_launch.h"

namespace twinflow::kernels::cuda {
namespace {

// The gradient factor: 1 without one (null); not finite when the step is skipped.
__device__ __forceinline__ float FactorOf(const float* factor) { return factor ? *factor : 1.0f; }
// The learning rate: the device input when there is one, else the attr.
__device__ __forceinline__ double RateOf(const float* on_device, double lr) {
  return on_device ? *on_device : lr;
}

template <typename T>
__global__ void SgdKernel(const T* p, const T* g, T* p_out, int64_t n, const float* lr_on_device,
                          float attr_lr, float wd, const float* factor) {
  const float f = FactorOf(factor);
  const float lr = static_cast<float>(RateOf(lr_on_device, attr_lr));
  TF_GRID_LOOP(i, n) {
    if (!isfinite(f)) {
      p_out[i] = p[i];
      continue;
    }
    const float pv = ToFloat(p[i]);
    StoreAs(p_out, i, pv - lr * (f * ToFloat(g[i]) + wd * pv));
  }
}

template <typename T>
__global__ void SgdMomentumKernel(const T* p, const T* g, const T* buf, T* p_out, T* buf_out,
                                  int64_t n, const float* lr_on_device, float attr_lr, float mu,
                                  float wd, const float* factor) {
  const float f = FactorOf(factor);
  const float lr = static_cast<float>(RateOf(lr_on_device, attr_lr));
  TF_GRID_LOOP(i, n) {
    if (!isfinite(f)) {
      p_out[i] = p[i];
      buf_out[i] = buf[i];
      continue;
    }
    const float pv = ToFloat(p[i]);
    const float b = mu * ToFloat(buf[i]) + f * ToFloat(g[i]) + wd * pv;
    StoreAs(buf_out, i, b);
    StoreAs(p_out, i, pv - lr * b);
  }
}

template <typename T>
__global__ void AdamKernel(const T* p, const T* g, const T* m, const T* v, const void* step,
                           DType step_dtype, T* p_out, T* m_out, T* v_out, int64_t n, UpdateAttrs a,
                           const float* factor) {
  const double t = LoadDouble(step, step_dtype, 0) + 1;
  const double c1 = 1 - pow(a.beta1, t), c2 = 1 - pow(a.beta2, t);
  const double f = FactorOf(factor);
  const double lr = RateOf(a.lr_on_device, a.lr);
  TF_GRID_LOOP(i, n) {
    if (!isfinite(f)) {
      p_out[i] = p[i];
      m_out[i] = m[i];
      v_out[i] = v[i];
      continue;
    }
    const double pv = LoadAs<double>(p, i);
    const double grad = f * LoadAs<double>(g, i) + (a.decoupled ? 0.0 : a.weight_decay * pv);
    const double m_new = a.beta1 * LoadAs<double>(m, i) + (1 - a.beta1) * grad;
    const double v_new = a.beta2 * LoadAs<double>(v, i) + (1 - a.beta2) * grad * grad;
    double update = (m_new / c1) / (sqrt(v_new / c2) + a.epsilon);
    if (a.decoupled) update += a.weight_decay * pv;
    StoreAs(p_out, i, pv - lr * update);
    StoreAs(m_out, i, m_new);
    StoreAs(v_out, i, v_new);
  }
}

__global__ void StepIncrementKernel(DType dtype, const void* x, void* out, int64_t n,
                                    const float* factor) {
  const double add = isfinite(FactorOf(factor)) ? 1 : 0;
  TF_GRID_LOOP(i, n) StoreDouble(out, dtype, i, LoadDouble(x, dtype, i) + add);
}

template <typename T>
const T* In(const void* p) {
  return static_cast<const T*>(p);
}
template <typename T>
T* Out(void* p) {
  return static_cast<T*>(p);
}

}  // namespace

#define TF_FOR_FLOAT(dtype, T, body) \
  if ((dtype) == DType::kF32) {      \
    using T = float;                 \
    body;                            \
  } else {                           \
    using T = bf16;                  \
    body;                            \
  }

void LaunchSgd(DType dtype, const void* p, const void* g, void* p_out, int64_t n,
               const UpdateAttrs& a, const float* factor, cudaStream_t stream) {
  if (n == 0) return;
  TF_FOR_FLOAT(dtype, T,
               (SgdKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
                   In<T>(p), In<T>(g), Out<T>(p_out), n, a.lr_on_device, static_cast<float>(a.lr),
                   static_cast<float>(a.weight_decay), factor)));
  TF_CUDA_CHECK_LAUNCH("SgdKernel");
}

void LaunchSgdMomentum(DType dtype, const void* p, const void* g, const void* buf, void* p_out,
                       void* buf_out, int64_t n, const UpdateAttrs& a, const float* factor,
                       cudaStream_t stream) {
  if (n == 0) return;
  TF_FOR_FLOAT(dtype, T,
               (SgdMomentumKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
                   In<T>(p), In<T>(g), In<T>(buf), Out<T>(p_out), Out<T>(buf_out), n,
                   a.lr_on_device, static_cast<float>(a.lr), static_cast<float>(a.momentum),
                   static_cast<float>(a.weight_decay), factor)));
  TF_CUDA_CHECK_LAUNCH("SgdMomentumKernel");
}

void LaunchAdam(DType dtype, const void* p, const void* g, const void* m, const void* v,
                const void* step, DType step_dtype, void* p_out, void* m_out, void* v_out,
                int64_t n, const UpdateAttrs& a, const float* factor, cudaStream_t stream) {
  if (n == 0) return;
  TF_FOR_FLOAT(dtype, T,
               (AdamKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
                   In<T>(p), In<T>(g), In<T>(m), In<T>(v), step, step_dtype, Out<T>(p_out),
                   Out<T>(m_out), Out<T>(v_out), n, a, factor)));
  TF_CUDA_CHECK_LAUNCH("AdamKernel");
}

void LaunchStepIncrement(DType dtype, const void* x, void* out, int64_t n, const float* factor,
                         cudaStream_t stream) {
  if (n == 0) return;
  StepIncrementKernel<<<BlocksFor(n), kThreads, 0, stream>>>(dtype, x, out, n, factor);
  TF_CUDA_CHECK_LAUNCH("StepIncrementKernel");
}

}  // namespace twinflow::kernels::cuda
