#pragma once
// `twinflow boxing`: plans the boxing between two layouts of one tensor and prints the plan.
// The planning and printing half is shared with `twinflow demo`.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/core/shape.h"
#include "engine/sbp/boxing_plan.h"
#include "engine/sbp/layout.h"

namespace twinflow::launcher {

struct BoxingQuery {
  Shape shape;
  DType dtype = DType::kF32;
  sbp::Layout from;
  sbp::Layout to;
  int64_t devices_per_node = 8;
};

// Parses one layout given on the command line; errors name the flag and its text.
sbp::Layout ParseLayoutArg(const std::string& flag, const std::string& text);

// Checks both layouts against the shape (errors name the flag) and plans under the alpha-beta
// cost model with query.devices_per_node.
sbp::BoxingPlan PlanQuery(const BoxingQuery& query);

// The plan table (it names the tensor and layouts and ends with the total), newline-ended.
void PrintPlan(const sbp::BoxingPlan& plan, std::ostream& out);

// Runs `twinflow boxing ARGS...`; returns the exit status. Throws twinflow::Error on bad input.
int RunBoxingCommand(const std::vector<std::string>& args, std::ostream& out);

}  // namespace twinflow::launcher
