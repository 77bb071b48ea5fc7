#include "engine/core/reduce_op.h"

#include "engine/core/error.h"

namespace twinflow {

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "?";
}

ReduceOp ParseReduceOp(std::string_view text) {
  if (text == "sum") return ReduceOp::kSum;
  if (text == "max") return ReduceOp::kMax;
  if (text == "min") return ReduceOp::kMin;
  throw SbpError("unknown reduce op '" + std::string(text) + "' (expected sum, max or min)");
}

}  // namespace twinflow
