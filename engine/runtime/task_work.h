#pragma once
// The work of one act of a task that its device thread does itself (every kind but COLLECTIVE,
// SEND and RECV): a SOURCE's feed copy, a COMPUTE kernel, a COPY's transfers, ACC, REPEAT, SINK
// and ASSIGN, all on views of the arena slots named by the Launch, through the task's Device
// (done when the call returns on a cpu device, enqueued on a GPU). Errors propagate; the caller
// names the task.
#include "engine/runtime/actor.h"
#include "engine/runtime/prepared_task.h"
#include "engine/runtime/run_context.h"

namespace twinflow::runtime {

void RunTaskWork(RunContext& ctx, const PreparedTask& task, const Launch& launch);

// The slot of `regst` among the launch's inputs or outputs (PlanError when absent).
const SlotRef& FindSlot(const std::vector<SlotRef>& slots, int64_t regst, const Launch& launch);

// Runs a VARIABLE's initialiser kernel into its slot.
void InitVariable(Device& device, const PreparedTask& task, Tensor& slot);

}  // namespace twinflow::runtime
