#pragma once
// OpRegistry: op types by name. No global state: engine/ops builds one with BuiltinOps() and
// callers pass it explicitly.
#include <map>
#include <string>
#include <vector>

#include "engine/graph/op_def.h"

namespace twinflow::graph {

class OpRegistry {
 public:
  void Register(OpDef def);                          // InvalidArgumentError on a duplicate type
  const OpDef& Find(const std::string& type) const;  // InvalidArgumentError on an unknown type
  bool Has(const std::string& type) const { return defs_.count(type) > 0; }
  std::vector<std::string> Types() const;  // sorted

 private:
  std::map<std::string, OpDef> defs_;
};

}  // namespace twinflow::graph
