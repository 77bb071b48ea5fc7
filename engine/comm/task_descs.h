#pragma once
// The tensors a communication task moves, as the Plan describes them: what the transports
// (MPI, NCCL) need of a member's registers beyond the slot views they are handed.
#include <cstdint>
#include <string>

#include "engine/core/tensor.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::comm {

// The data register a task reads, and the one it writes (PlanError naming the task if none).
const plan::TensorDesc& InputDesc(const plan::Plan& plan, const plan::Task& task);
const plan::TensorDesc& OutputDesc(const plan::Plan& plan, const plan::Task& task);
// The bytes of a tensor so described; `what` names it in errors.
int64_t BytesOf(const plan::TensorDesc& desc, const std::string& what);
// A zeroed host tensor so described.
Tensor Empty(const plan::TensorDesc& desc, const std::string& what);

}  // namespace twinflow::comm
