#pragma once
// The tensors a communication task moves, as the Plan describes them: what the transports
// (MPI, NCCL) need of a member's registers beyond the slot views they are handed.
#include <cstdint>
#include <string>

#include "engine/core/tensor.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::comm {

// The tensor a task reads, and the one it writes (PlanError naming the task if none): its
// data register's, or for an all_reduce bucket of several, the 1-D tensor of all their
// elements in order (the bucket packed, as the MPI transport is handed it).
plan::TensorDesc InputDesc(const plan::Plan& plan, const plan::Task& task);
plan::TensorDesc OutputDesc(const plan::Plan& plan, const plan::Task& task);
// The bytes of a tensor so described; `what` names it in errors.
int64_t BytesOf(const plan::TensorDesc& desc, const std::string& what);
// A zeroed host tensor so described.
Tensor Empty(const plan::TensorDesc& desc, const std::string& what);

}  // namespace twinflow::comm
