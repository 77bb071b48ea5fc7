#pragma once
// One op instance in two float types: the reference's (every float f32) and the one under test
// (bf16, f16; the CUDA test's f32 and bf16). The inputs are drawn once and rounded to the type
// under test first, so both sides see the same values; outputs compare within the tolerance of
// the type under test.
#include <string>
#include <vector>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {

struct PairedInstance {
  OpInstance cpu;  // the reference: floats as f32
  OpInstance gpu;  // the side under test: floats as `dtype` (not only on a GPU)
  std::vector<Tensor> cpu_inputs;
  std::vector<Tensor> gpu_inputs;
  DType dtype = DType::kF32;
};

// `instance` with every floating input but its f32_inputs (and a floating "dtype" attr) as
// `dtype`.
OpInstance WithFloatDType(const OpInstance& instance, DType dtype);
// Fills the instance's inputs from rng and pairs them (see PairedInstance).
PairedInstance Pair(const OpInstance& instance, DType dtype, Rng& rng);
// The output metas of the side under test: the reference's, floats as paired.dtype except the
// instance's f32_outputs.
std::vector<graph::TensorMeta> PairedOutputMetas(std::vector<graph::TensorMeta> reference,
                                                 const PairedInstance& paired);

// Empty when every output of `got` (in `dtype`) matches `want` (the f32 reference) within the
// tolerance of `dtype` (docs/kernels.md); else a description of the first mismatch.
std::string CompareWithTolerance(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                 DType dtype);

}  // namespace twinflow::testing
