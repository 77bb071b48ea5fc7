#pragma once
// Runs one op instance with the real kernels: on a single device (the reference), or per
// device of a placement under an N-D SBP signature, on Distribute'd inputs, with the outputs
// Assemble'd back. The SBP rule property test and the undeclared-signature diagnostic use it.
#include <string>
#include <vector>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"
#include "engine/graph/op_def.h"
#include "engine/graph/op_registry.h"
#include "engine/sbp/placement.h"
#include "kernels/kernel.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {

struct OpRunner {
  const graph::OpRegistry& ops;
  const kernels::KernelRegistry& kernels;

  std::vector<graph::TensorMeta> OutputMetas(const OpInstance& instance) const;
  std::vector<Tensor> RunSingle(const OpInstance& instance,
                                const std::vector<Tensor>& inputs) const;
  // Throws what Distribute, the kernel or Assemble throw (a wrong rule may produce shapes that
  // do not fit).
  std::vector<Tensor> RunDistributed(const OpInstance& instance, const std::vector<Tensor>& inputs,
                                     const graph::NdSbpSignature& signature,
                                     const sbp::Placement& placement, Rng& rng) const;
};

// Empty when `got` equals `want`: exactly for integer outputs, within a tolerance scaled by the
// values' magnitude and the device count for floats (partial sums change the order of
// additions). Otherwise a description of the first mismatch.
std::string CompareOutputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                           int64_t devices);

}  // namespace twinflow::testing
