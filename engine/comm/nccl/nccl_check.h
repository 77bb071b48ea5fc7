#pragma once
// NCCL's results as twinflow errors, and its names for our dtypes and reductions. Built with
// NCCL only (TWINFLOW_HAVE_NCCL); built, not verified on a GPU.
#include <nccl.h>

#include <string>

#include "engine/core/dtype.h"
#include "engine/core/reduce_op.h"

namespace twinflow::comm {

// CommError "NCCL: <call> failed on rank R: <NCCL's message> (<its last error>)" unless
// `result` is ncclSuccess (or ncclInProgress, which non-blocking calls return).
void CheckNccl(ncclResult_t result, const std::string& call, int rank);

ncclDataType_t NcclType(DType dtype);  // every dtype has one
ncclRedOp_t NcclOp(ReduceOp op);

}  // namespace twinflow::comm
