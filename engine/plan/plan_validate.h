#pragma once
// Structural validation of a Plan. Throws PlanError naming the task, register or device at
// fault. Checked: every id equals its index and every reference is in range; each register has
// exactly one producer, which lists it among its produced registers, and every consumer lists
// it among its consumed ones (consumers ascending, without repeats); slot counts are at least
// one and byte sizes match the tensor descriptions; task kinds carry what they need (a COMPUTE
// task an op whose tensor counts match its registers, a COLLECTIVE a group it belongs to, ACC
// and REPEAT positive counts, exactly the inputs and outputs each kind takes); comm groups list
// existing devices once each; the graph of one piece (registers with lag 0) is acyclic; and
// every memory offset of every slot lies inside its device's arena.
#include "engine/plan/plan.pb.h"

namespace twinflow::plan {

void ValidatePlan(const Plan& plan);

}  // namespace twinflow::plan
