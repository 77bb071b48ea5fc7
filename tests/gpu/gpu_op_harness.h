#pragma once
// Runs op instances (tests/support/op_cases.h) on a CUDA device next to the CPU reference:
// paired as tests/support/dtype_pair.h says, copied to the device, the CUDA kernel runs on an
// OwnedCudaEnv, and the outputs come back for CompareWithTolerance.
#include <string>
#include <vector>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"
#include "kernels/cuda/cuda_env.h"
#include "tests/support/dtype_pair.h"
#include "tests/support/op_runner.h"

namespace twinflow::testing {

// Empty when a CUDA device is usable, else why not (the CUDA error's text). Never throws and
// touches the driver only on the first call, never while tests are listed.
const std::string& NoCudaDeviceReason();

// Skips the test, with the reason, where no CUDA device can be used.
#define REQUIRE_CUDA_DEVICE()                                            \
  do {                                                                   \
    if (!NoCudaDeviceReason().empty()) {                                 \
      GTEST_SKIP() << "no usable CUDA device: " << NoCudaDeviceReason(); \
    }                                                                    \
  } while (0)

// Runs the CUDA kernel of the paired instance; returns its outputs on the host. Throws what
// the kernel throws, and DeviceError for a flagged device fault.
std::vector<Tensor> RunOnDevice(const kernels::KernelRegistry& cuda, const OpRunner& runner,
                                const PairedInstance& paired, const kernels::OwnedCudaEnv& env);

}  // namespace twinflow::testing
