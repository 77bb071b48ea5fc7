#pragma once
// The SBP search's cost model for a cluster: the links, device rates and launch overhead the
// simulator times a Plan with, so what the search prefers is what the simulator predicts
// (as the original design notes ask). cpu-local specs keep the `cpu-host` preset `twinflow run`
// compiles with, so a simulated CPU job is the very Plan that ran.
#include "engine/sbp/alpha_beta_cost_model.h"
#include "simulator/hardware/cluster_spec.pb.h"

namespace twinflow::sim {

sbp::AlphaBetaConfig SearchCostConfig(const ClusterSpec& spec);

}  // namespace twinflow::sim
