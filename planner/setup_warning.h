#pragma once
// Yesterday's setup: an LLM simulated on GPUs in fp32 or with unfused attention shows a third of
// the MFU and several times the memory a 2025 run has (Llama-3-8B at dp=32,tp=2 on 8 DGX-H100
// nodes: 14% MFU and 418 GiB, against 45% and 76 GiB in bf16 with fused attention), so a user
// who left the defaults is told which flag to change.
#include <string>

#include "models/model.h"
#include "simulator/hardware/cluster.h"

namespace twinflow::planner {

// One line naming what to change ("precision=bf16 in the strategy, --attention fused"), or empty
// when the model is no LLM, the cluster has no GPUs, or nothing is to change.
std::string SetupWarning(const models::BuiltModel& model, const sim::ClusterSpec& spec);
// The same from what the model is: an LLM (a decoder), its precision, fused attention or not.
std::string SetupWarning(bool llm, DType precision, bool fused_attention,
                         const sim::ClusterSpec& spec);

}  // namespace twinflow::planner
