#pragma once
// A compiled model: the Plan and the SBP assignment that explains it.
#include "engine/compiler/compile.h"
#include "simulator/hardware/cluster_spec.pb.h"
#include "python/src/bindings.h"

namespace twinflow::python {

// A preset name (with `nodes`), or the path of a ClusterSpec in protobuf text.
// InvalidArgumentError naming it otherwise.
sim::ClusterSpec ClusterFor(const std::string& cluster, int nodes);

struct Program {
  Model model;
  compiler::Compiled compiled;
  std::string cost_model;  // the SBP search's: a preset name, or the cluster priced
};

}  // namespace twinflow::python
