#include "engine/comm/nccl/nccl_check.h"

#include "engine/core/error.h"

namespace twinflow::comm {

void CheckNccl(ncclResult_t result, const std::string& call, int rank) {
  // The communicators are blocking (BlockingConfig), so ncclInProgress would mean an operation
  // not yet on its stream: its completion event could pass early. It is an error here.
  if (result == ncclSuccess) return;
  std::string message = "NCCL: " + call + " failed on rank " + std::to_string(rank) + ": " +
                        ncclGetErrorString(result);
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') message += std::string(" (") + last + ")";
  throw CommError(message);
}

ncclDataType_t NcclType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return ncclFloat32;
    case DType::kF64:
      return ncclFloat64;
    case DType::kI32:
      return ncclInt32;
    case DType::kI64:
      return ncclInt64;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kF16:
      return ncclFloat16;
  }
  throw InvalidArgumentError("no NCCL type for this dtype");
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  throw InvalidArgumentError("no NCCL reduction for this op");
}

}  // namespace twinflow::comm
