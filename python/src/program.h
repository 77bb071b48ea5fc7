#pragma once
// A compiled model: the Plan and the SBP assignment that explains it.
#include "engine/compiler/compile.h"
#include "python/src/bindings.h"

namespace twinflow::python {

struct Program {
  Model model;
  compiler::Compiled compiled;
  std::string cost_model;  // the SBP search's: a preset name, or the cluster priced
};

}  // namespace twinflow::python
