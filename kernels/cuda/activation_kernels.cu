// Device code of the activations, one thread per element. As on the CPU: relu, tanh, exp and
// tanh_grad compute in the accumulation type (double for f32) and round once; gelu and
// gelu_grad compute in float through the same branch-free tanh as kernels/cpu/fast_tanh.h,
// so f32 results agree with the CPU's within an ulp or two.
#include "kernels/cuda/activation_launch.h"
#include "kernels/cuda/device_common.cuh"

namespace twinflow::kernels::cuda {
namespace {

// e^x for x in [-87, 0] (fast_tanh.h's ExpNonPositive, ported).
__device__ __forceinline__ float ExpNonPositive(float x) {
  x = x > -87.0f ? x : -87.0f;
  constexpr float kRound = 12582912.0f;
  const float k = __fsub_rn(__fadd_rn(__fmul_rn(x, 1.44269504f), kRound), kRound);
  const float r =
      __fsub_rn(__fsub_rn(x, __fmul_rn(k, 0.693359375f)), __fmul_rn(k, -2.12194440e-4f));
  float p = 1.0f / 720.0f;
  p = __fadd_rn(__fmul_rn(p, r), 1.0f / 120.0f);
  p = __fadd_rn(__fmul_rn(p, r), 1.0f / 24.0f);
  p = __fadd_rn(__fmul_rn(p, r), 1.0f / 6.0f);
  p = __fadd_rn(__fmul_rn(p, r), 0.5f);
  p = __fadd_rn(__fmul_rn(p, r), 1.0f);
  p = __fadd_rn(__fmul_rn(p, r), 1.0f);
  return p * __int_as_float((static_cast<int>(k) + 127) << 23);
}

__device__ __forceinline__ float FastTanh(float u) {
  const float e = ExpNonPositive(-2.0f * fabsf(u));
  const float magnitude = u != u ? u : __fdiv_rn(1.0f - e, 1.0f + e);
  return __int_as_float(__float_as_int(magnitude) | (__float_as_int(u) & 0x80000000));
}

constexpr float kGeluC = 0.044715f;
constexpr float kSqrt2OverPi = 0.797884560802865355879892119868763737f;

__device__ __forceinline__ float GeluSlope(float x) {
  const float t = FastTanh(kSqrt2OverPi * (x + kGeluC * x * x * x));
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluC * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

template <typename T>
__global__ void ActivationKernel(Activation op, const T* x, const T* fwd, T* out, int64_t n) {
  using A = Acc<T>;
  TF_GRID_LOOP(i, n) {
    const A v = LoadAs<A>(x, i);
    A r = 0;
    switch (op) {
      case Activation::kRelu:
        r = v <= A(0) ? A(0) : v;  // keeps a NaN
        break;
      case Activation::kGelu: {
        const float f = static_cast<float>(v);
        r = 0.5f * f * (1.0f + FastTanh(kSqrt2OverPi * (f + kGeluC * f * f * f)));
        break;
      }
      case Activation::kTanh:
        r = tanh(v);
        break;
      case Activation::kExp:
        r = exp(v);
        break;
      case Activation::kSilu:
        r = v / (A(1) + exp(-v));  // x sigmoid(x); -0 for very negative x
        break;
      case Activation::kReluGrad: {
        const A y = LoadAs<A>(fwd, i);
        r = y > A(0) ? v : A(0) * (v + y) + A(0);  // NaN stays visible through the mask
        break;
      }
      case Activation::kGeluGrad:
        r = static_cast<float>(v) * GeluSlope(LoadAs<float>(fwd, i));
        break;
      case Activation::kSiluGrad: {
        const A x = LoadAs<A>(fwd, i);
        const A s = A(1) / (A(1) + exp(-x));
        r = v * s * (A(1) + x * (A(1) - s));
        break;
      }
      case Activation::kTanhGrad: {
        const A y = LoadAs<A>(fwd, i);
        r = v * (A(1) - y * y);
        break;
      }
    }
    StoreAs(out, i, r);
  }
}

}  // namespace

void LaunchActivation(Activation op, DType dtype, const void* x, const void* fwd, void* out,
                      int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (dtype == DType::kF32) {
    ActivationKernel<float><<<BlocksFor(n), kThreads, 0, stream>>>(op, static_cast<const float*>(x),
                                                                   static_cast<const float*>(fwd),
                                                                   static_cast<float*>(out), n);
  } else {
    ActivationKernel<bf16><<<BlocksFor(n), kThreads, 0, stream>>>(
        op, static_cast<const bf16*>(x), static_cast<const bf16*>(fwd), static_cast<bf16*>(out), n);
  }
  TF_CUDA_CHECK_LAUNCH("ActivationKernel");
}

}  // namespace twinflow::kernels::cuda
