#pragma once
// Every built-in op type. Each family lives in its own file (matmul_ops.cc,
// elementwise_ops.cc, ...) with a Register*Ops function that BuiltinOps calls.
#include "engine/graph/op_registry.h"

namespace twinflow::ops {

graph::OpRegistry BuiltinOps();

}  // namespace twinflow::ops
