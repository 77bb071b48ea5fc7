#pragma once
// TWINFLOW_HOST_DEVICE marks a header-only function that the host compiler and nvcc both
// compile, so the CPU and CUDA kernels share one definition of an arithmetic fact.
#ifdef __CUDACC__
#define TWINFLOW_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TWINFLOW_HOST_DEVICE inline
#endif
