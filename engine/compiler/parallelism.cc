#include "engine/compiler/parallelism.h"

#include <algorithm>
#include <sstream>

namespace twinflow::compiler {

std::vector<FamilyParallelism> ParallelismByFamily(const graph::LogicalGraph& graph,
                                                   const graph::OpRegistry& registry,
                                                   const SbpAssignment& assignment) {
  std::map<std::string, FamilyParallelism> families;
  for (const graph::OpNode& op : graph.ops()) {
    const graph::OpDef& def = registry.Find(op.type);
    if (def.is_source() || graph.IsBackward(op.id)) continue;
    FamilyParallelism& family = families[op.type];
    family.type = op.type;
    ++family.ops;
    const Shape& mesh = op.placement.hierarchy();
    if (family.axes.size() < static_cast<size_t>(mesh.rank())) family.axes.resize(mesh.rank());
    std::vector<graph::TensorMeta> inputs;
    for (graph::TensorId t : op.inputs) inputs.push_back(graph.tensor(t).meta);
    const graph::OpContext ctx{op.type, op.attrs, inputs};
    const graph::NdSbpSignature& nd = assignment.signatures[op.id];
    for (int a = 0; a < mesh.rank(); ++a) {
      if (mesh[a] == 1) continue;
      graph::SbpSignature one;
      for (const sbp::NdSbp& s : nd.inputs) one.inputs.push_back(s[a]);
      for (const sbp::NdSbp& s : nd.outputs) one.outputs.push_back(s[a]);
      ++family.axes[a][graph::ParallelismName(def, ctx, one)];
    }
  }
  std::vector<FamilyParallelism> result;
  for (auto& [type, family] : families) result.push_back(std::move(family));
  return result;
}

std::string ParallelismTable(const std::vector<FamilyParallelism>& families) {
  size_t width = 4;
  for (const FamilyParallelism& f : families) width = std::max(width, f.type.size());
  std::ostringstream out;
  for (const FamilyParallelism& f : families) {
    out << "  " << f.type << std::string(width - f.type.size() + 2, ' ') << f.ops
        << (f.ops == 1 ? " op " : " ops");
    bool any = false;
    for (size_t a = 0; a < f.axes.size(); ++a) {
      if (f.axes[a].empty()) continue;
      out << (any ? "; " : "  ") << "axis " << a << ":";
      bool first = true;
      for (const auto& [name, count] : f.axes[a]) {
        out << (first ? " " : ", ") << count << " " << name;
        first = false;
      }
      any = true;
    }
    if (!any) out << "  one device";
    out << "\n";
  }
  return out.str();
}

}  // namespace twinflow::compiler
