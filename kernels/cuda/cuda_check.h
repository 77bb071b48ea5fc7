#pragma once
// Checks for every CUDA runtime and cuBLASLt call: a failure throws twinflow::DeviceError whose
// message names the call, the file:line and the CUDA error's name and text. Kernel launches
// are checked with TF_CUDA_CHECK_LAUNCH (cudaGetLastError), since a launch returns nothing.
// Plain declarations only, so that .cu files include this without the engine's headers.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace twinflow::kernels {

[[noreturn]] void ThrowCudaError(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void ThrowCublasError(cublasStatus_t status, const char* call, const char* file,
                                   int line);

inline void CheckCuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) ThrowCudaError(status, call, file, line);
}
inline void CheckCublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) ThrowCublasError(status, call, file, line);
}

}  // namespace twinflow::kernels

#define TF_CUDA_CHECK(call) ::twinflow::kernels::CheckCuda((call), #call, __FILE__, __LINE__)
#define TF_CUBLAS_CHECK(call) ::twinflow::kernels::CheckCublas((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: reports a bad configuration (or an earlier asynchronous fault).
#define TF_CUDA_CHECK_LAUNCH(kernel_name) \
  ::twinflow::kernels::CheckCuda(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
