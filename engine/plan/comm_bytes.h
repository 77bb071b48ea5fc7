#pragma once
// The bytes a communication task moves per act, as the simulator prices it and traces and
// execution-trace exports report it.
#include <cstdint>

#include "engine/plan/plan.pb.h"

namespace twinflow::plan {

// A COLLECTIVE, SEND, RECV or COPY task's bytes per act: the largest data register it reads or
// writes, or for an all_reduce bucket (several inputs) their sum, the one message it is; -1 for
// any other task.
int64_t CommBytes(const Plan& plan, const Task& t);

}  // namespace twinflow::plan
