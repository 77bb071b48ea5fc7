#pragma once
// Runs op instances (tests/support/op_cases.h) on a CUDA device next to the CPU reference:
// float inputs are converted to the dtype under test (bf16 values rounded first, then given to
// the CPU in f32), copied to the device, the CUDA kernel runs on an OwnedCudaEnv, and the
// outputs come back for comparison with a per-dtype tolerance.
#include <string>
#include <vector>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"
#include "kernels/cuda/cuda_env.h"
#include "tests/support/op_runner.h"

namespace twinflow::testing {

// Empty when a CUDA device is usable, else why not (the CUDA error's text). Never throws and
// touches the driver only on the first call, never while tests are listed.
const std::string& NoCudaDeviceReason();

// One instance prepared for both sides: the CPU's (floats as f32) and the device's (floats as
// `dtype`), with host copies of the inputs of each.
struct PairedInstance {
  OpInstance cpu;
  OpInstance gpu;
  std::vector<Tensor> cpu_inputs;
  std::vector<Tensor> gpu_inputs;
  DType dtype = DType::kF32;
};

// `instance` with every floating input but its f32_inputs (and a floating "dtype" attr) as
// `dtype`.
OpInstance WithFloatDType(const OpInstance& instance, DType dtype);
// Fills the instance's inputs from rng and pairs them (see PairedInstance).
PairedInstance Pair(const OpInstance& instance, DType dtype, Rng& rng);

// Runs the CUDA kernel of the paired instance; returns its outputs on the host. Throws what
// the kernel throws, and DeviceError for a flagged device fault.
std::vector<Tensor> RunOnDevice(const kernels::KernelRegistry& cuda, const OpRunner& runner,
                                const PairedInstance& paired, const kernels::OwnedCudaEnv& env);

// Empty when every output of `got` (device, in `dtype`) matches `want` (CPU, f32) within the
// tolerance of `dtype` (docs/kernels.md); else a description of the first mismatch.
std::string CompareWithTolerance(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                 DType dtype);

}  // namespace twinflow::testing
