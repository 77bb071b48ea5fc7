#include "engine/graph/op_registry.h"

#include "engine/core/error.h"

namespace twinflow::graph {

void OpRegistry::Register(OpDef def) {
  if (def.type.empty()) throw InvalidArgumentError("cannot register an op with an empty type");
  if (defs_.count(def.type)) {
    throw InvalidArgumentError("op type '" + def.type + "' is registered twice");
  }
  std::string type = def.type;
  defs_.emplace(std::move(type), std::move(def));
}

const OpDef& OpRegistry::Find(const std::string& type) const {
  auto it = defs_.find(type);
  if (it == defs_.end()) throw InvalidArgumentError("unknown op type '" + type + "'");
  return it->second;
}

std::vector<std::string> OpRegistry::Types() const {
  std::vector<std::string> types;
  types.reserve(defs_.size());
  for (const auto& [type, def] : defs_) types.push_back(type);
  return types;
}

}  // namespace twinflow::graph
