#include "kernels/cuda/cuda_env.h"

#include "engine/core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_fault.h"
#include "kernels/cuda/matmul_plans.h"

namespace twinflow::kernels {
namespace {

const char* FaultText(int code) {
  switch (code) {
    case kEmbeddingIdOutOfRange:
      return "embedding: an id is out of range of the vocabulary";
    case kEmbeddingGradIdOutOfRange:
      return "embedding_grad: an id is out of range [0, num_embeddings)";
    case kXentLabelOutOfRange:
      return "sparse_softmax_cross_entropy: a label is out of range of the classes";
    case kXentGradLabelOutOfRange:
      return "sparse_softmax_cross_entropy_grad: a label is out of range of the classes";
    case kPickLabelOutOfRange:
      return "pick_label_logit: a label is out of range of the classes";
    case kPickLabelGradOutOfRange:
      return "pick_label_logit_grad: a label is out of range [0, num_classes)";
    default:
      return "a kernel reported an unknown fault";
  }
}

}  // namespace

int CudaDeviceCount(std::string* reason) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (reason) *reason = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    cudaGetLastError();  // the failure is sticky in the runtime's last-error slot otherwise
    return 0;
  }
  if (count == 0 && reason) *reason = "cudaGetDeviceCount found no CUDA device";
  return count;
}

std::string GpuBusId(int gpu) {
  char id[64] = {};
  TF_CUDA_CHECK(cudaDeviceGetPCIBusId(id, sizeof(id), gpu));
  return id;
}

void CheckDeviceFaults(const CudaEnv& env) {
  if (env.error_flag_host == nullptr) return;
  const int code = *env.error_flag_host;
  if (code == kNoFault) return;
  *env.error_flag_host = kNoFault;
  throw DeviceError(std::string(FaultText(code)) + " (device " + std::to_string(env.device) +
                    ", error flag " + std::to_string(code) + ")");
}

OwnedCudaEnv::OwnedCudaEnv(int device, size_t workspace_bytes, bool allow_tf32) {
  env_.device = device;
  env_.allow_tf32 = allow_tf32;
  try {
    TF_CUDA_CHECK(cudaSetDevice(device));
    TF_CUDA_CHECK(cudaStreamCreateWithFlags(&env_.stream, cudaStreamNonBlocking));
    TF_CUBLAS_CHECK(cublasLtCreate(&env_.lt));
    if (workspace_bytes > 0) TF_CUDA_CHECK(cudaMalloc(&env_.workspace, workspace_bytes));
    env_.workspace_bytes = workspace_bytes;
    void* flag = nullptr;
    TF_CUDA_CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
    env_.error_flag_host = static_cast<volatile int*>(flag);
    *env_.error_flag_host = kNoFault;
    void* device_flag = nullptr;
    TF_CUDA_CHECK(cudaHostGetDevicePointer(&device_flag, flag, 0));
    env_.error_flag = static_cast<int*>(device_flag);
    matmul_plans_ = std::make_unique<cuda::MatmulPlans>();
    env_.matmul_plans = matmul_plans_.get();
  } catch (...) {
    Release();
    throw;
  }
}

OwnedCudaEnv::~OwnedCudaEnv() { Release(); }

void OwnedCudaEnv::Synchronize() const {
  TF_CUDA_CHECK(cudaStreamSynchronize(env_.stream));
  CheckDeviceFaults(env_);
}

// Frees in reverse order of creation; errors are ignored (a destructor must not throw, and a
// failed device has nothing left to free).
void OwnedCudaEnv::Release() noexcept {
  if (env_.stream) cudaStreamSynchronize(env_.stream);
  matmul_plans_.reset();
  if (env_.error_flag_host) cudaFreeHost(const_cast<int*>(env_.error_flag_host));
  if (env_.workspace) cudaFree(env_.workspace);
  if (env_.lt) cublasLtDestroy(env_.lt);
  if (env_.stream) cudaStreamDestroy(env_.stream);
  env_ = CudaEnv{};
}

}  // namespace twinflow::kernels
