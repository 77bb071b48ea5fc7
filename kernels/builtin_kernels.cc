#include "kernels/builtin_kernels.h"

#include "kernels/cpu/cpu_kernels.h"
#ifdef TWINFLOW_HAVE_CUDA
#include "kernels/cuda/cuda_kernels.h"
#endif

namespace twinflow::kernels {

KernelRegistry BuiltinKernels() {
  KernelRegistry registry = CpuKernels();
#ifdef TWINFLOW_HAVE_CUDA
  RegisterCudaKernels(registry);
#endif
  return registry;
}

bool HaveCudaKernels() {
#ifdef TWINFLOW_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace twinflow::kernels
