#pragma once
// Codes a kernel stores in CudaEnv::error_flag when it meets input it cannot honour. A device
// cannot throw, so the kernel clamps (an out-of-range id reads nothing and writes zeros) and
// the host turns the code into an error after synchronising (CheckDeviceFaults).
namespace twinflow::kernels {

enum DeviceFault : int {
  kNoFault = 0,
  kEmbeddingIdOutOfRange = 1,
  kEmbeddingGradIdOutOfRange = 2,
  kXentLabelOutOfRange = 3,
  kXentGradLabelOutOfRange = 4,
  kPickLabelOutOfRange = 5,
  kPickLabelGradOutOfRange = 6,
};

}  // namespace twinflow::kernels
