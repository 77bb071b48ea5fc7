#pragma once
// Runs a BoxingPlan over in-memory devices (host buffers): the reference executor.
#include <cstdint>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/sbp/boxing_plan.h"

namespace twinflow::sbp {

struct BoxingResult {
  std::vector<Tensor> outputs;     // by parallel index of plan.dst.placement
  int64_t cross_device_bytes = 0;  // bytes that one device received from another
};

// `inputs` are the physical tensors of plan.src, by parallel index. Throws SbpError or
// ShapeError when a step does not fit the buffers it is given (a wrong plan never passes
// silently).
BoxingResult ExecuteBoxing(const BoxingPlan& plan, std::vector<Tensor> inputs);

}  // namespace twinflow::sbp
