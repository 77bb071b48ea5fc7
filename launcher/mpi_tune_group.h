#pragma once
// The tune group of an mpirun job (planner/tune_group.h): its ranks share the candidates and
// gather each batch's outcomes with comm::AllgatherText.
#include <memory>

#include "planner/tune_group.h"

namespace twinflow::launcher {

// Rank `rank` of the `ranks` of an mpirun job; its MpiSession must outlive the group.
std::unique_ptr<planner::TuneGroup> MpiTune(int rank, int ranks);

}  // namespace twinflow::launcher
