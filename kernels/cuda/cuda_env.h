#pragma once
// CudaEnv: what a CUDA kernel needs besides its tensors: the device, the stream it enqueues
// on, a cuBLASLt handle with its workspace, and the error flag through which kernels report
// faults they cannot throw (an index out of range). OwnedCudaEnv creates and frees all of it
// for one device, for tests and for the runtime's device worker.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

namespace twinflow::kernels {
namespace cuda {
class MatmulPlans;
}

struct CudaEnv {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;  // device memory for cuBLASLt, used only on `stream`
  size_t workspace_bytes = 0;
  // f32 matmuls may use TF32 tensor cores (10-bit mantissa products): faster, less exact.
  bool allow_tf32 = false;
  // An int in mapped pinned host memory: the device pointer for kernels, the host pointer for
  // CheckDeviceFaults. 0 means no fault; a kernel that meets a bad index stores a DeviceFault
  // code (the first one wins), clamps and carries on.
  int* error_flag = nullptr;
  volatile int* error_flag_host = nullptr;
  // cuBLASLt plans by matmul shape (matmul_plans.h), made on first use on this env's thread.
  cuda::MatmulPlans* matmul_plans = nullptr;
};

// Number of CUDA devices; 0 with `reason` set to the CUDA error's text when there are none or
// the driver is missing. Never throws, so tests can skip with the reason.
int CudaDeviceCount(std::string* reason);

// The PCI bus id of GPU `gpu` ("0000:1b:00.0"): which physical GPU it is, whatever
// CUDA_VISIBLE_DEVICES numbers it (DeviceError naming the call on failure).
std::string GpuBusId(int gpu);

// After synchronising env.stream: DeviceError naming the op whose kernel raised the error flag
// (and clears it); nothing when no fault was flagged.
void CheckDeviceFaults(const CudaEnv& env);

class OwnedCudaEnv {
 public:
  // DeviceError naming the failing call when the device or a resource cannot be created.
  explicit OwnedCudaEnv(int device = 0, size_t workspace_bytes = size_t{32} << 20,
                        bool allow_tf32 = false);
  ~OwnedCudaEnv();
  OwnedCudaEnv(const OwnedCudaEnv&) = delete;
  OwnedCudaEnv& operator=(const OwnedCudaEnv&) = delete;

  const CudaEnv& env() const { return env_; }
  const CudaEnv* get() const { return &env_; }
  void Synchronize() const;  // waits for the stream, then CheckDeviceFaults

 private:
  void Release() noexcept;
  CudaEnv env_;
  std::unique_ptr<cuda::MatmulPlans> matmul_plans_;  // env_.matmul_plans; freed before lt
};

}  // namespace twinflow::kernels
