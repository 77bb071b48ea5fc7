#pragma once
// The reductions a Partial value may stand for.
#include <string>
#include <string_view>

namespace twinflow {

enum class ReduceOp { kSum, kMax, kMin };

const char* ReduceOpName(ReduceOp op);          // "sum", "max", "min"
ReduceOp ParseReduceOp(std::string_view text);  // throws SbpError naming the text

}  // namespace twinflow
