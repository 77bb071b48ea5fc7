#pragma once
// The bytes traces and execution-trace exports say a task moves or writes (what it moves:
// plan::CommBytes, engine/plan/comm_bytes.h).
#include <cstdint>

#include "engine/plan/comm_bytes.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::trace {

using plan::CommBytes;

// The bytes of one slot of every register the task writes.
int64_t OutputBytes(const plan::Plan& plan, const plan::Task& t);

}  // namespace twinflow::trace
