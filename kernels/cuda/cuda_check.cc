#include "kernels/cuda/cuda_check.h"

#include <string>

#include "engine/core/error.h"

namespace twinflow::kernels {

void ThrowCudaError(cudaError_t status, const char* call, const char* file, int line) {
  throw DeviceError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                    cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

void ThrowCublasError(cublasStatus_t status, const char* call, const char* file, int line) {
  throw DeviceError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                    cublasLtGetStatusName(status) + " (" + cublasLtGetStatusString(status) + ")");
}

}  // namespace twinflow::kernels
