#pragma once
// Pieces of ExecuteBoxing shared by its files; not for use elsewhere. The executor checks and
// runs one step at a time: collectives in boxing_executor_collectives.cc, the copies (local
// slices, send/recv transfers, broadcasts) in boxing_executor_copies.cc.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/sbp/boxing_plan.h"

namespace twinflow::sbp::boxing_execution {

// What one step sees: the logical shape, the step and its 1-based number for messages.
struct StepContext {
  const Shape& shape;
  DType dtype;
  const BoxingStep& step;
  size_t number;

  std::string Name() const {
    return "step " + std::to_string(number) + " (" + BoxingStepKindName(step.kind) + ")";
  }
};

inline int64_t Bytes(const Tensor& t) { return t.nbytes(); }

// A partial value on a mesh axis with more than one device cannot be cut or copied piecewise.
bool HasRealPartial(const Layout& layout);
void CheckSamePlacement(const StepContext& ctx);
void CheckMeshAxis(const StepContext& ctx);

// Each runs one step on `current` (the buffers by parallel index, replaced by the step's
// outputs) and returns the bytes that crossed devices. Throw SbpError or ShapeError naming the
// step when it does not fit the buffers.
int64_t RunCollective(const StepContext& ctx, std::vector<Tensor>& current);
int64_t RunBroadcast(const StepContext& ctx, std::vector<Tensor>& current);
int64_t RunLocalSlice(const StepContext& ctx, std::vector<Tensor>& current);
int64_t RunSendRecv(const StepContext& ctx, std::vector<Tensor>& current);

}  // namespace twinflow::sbp::boxing_execution
