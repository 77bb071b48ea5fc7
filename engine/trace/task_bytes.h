#pragma once
// The bytes traces and execution-trace exports say a task moves or writes.
#include <cstdint>

#include "engine/plan/plan.pb.h"

namespace twinflow::trace {

// A communication task's (COLLECTIVE, SEND, RECV, COPY) bytes per act: the largest data
// register it reads or writes; -1 for any other task.
int64_t CommBytes(const plan::Plan& plan, const plan::Task& t);

// The bytes of one slot of every register the task writes.
int64_t OutputBytes(const plan::Plan& plan, const plan::Task& t);

}  // namespace twinflow::trace
