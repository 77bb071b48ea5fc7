#include "models/memory_floor.h"

#include <algorithm>
#include <map>

#include "engine/sbp/slicing.h"

namespace twinflow::models {

int64_t VariableBytesFloor(const BuiltModel& model, const graph::OpRegistry& registry) {
  std::map<sbp::DeviceId, int64_t> bytes;  // by device
  for (const graph::OpNode& op : model.graph.ops()) {
    if (registry.Find(op.type).role != graph::OpRole::kVariable) continue;
    const sbp::Placement& placement = op.placement;
    for (const graph::TensorId t : op.outputs) {
      const graph::TensorNode& node = model.graph.tensor(t);
      const int64_t size = DTypeSize(node.meta.dtype);
      const bool pinned = node.pin && node.pin->free_axes.empty();
      for (int64_t d = 0; d < placement.size(); ++d) {
        const int64_t elements =
            pinned ? sbp::PhysicalShape(node.meta.shape, {placement, node.pin->layout}, d).numel()
                   : node.meta.shape.numel() / placement.size();
        bytes[placement.device(d)] += elements * size;
      }
    }
  }
  int64_t most = 0;
  for (const auto& entry : bytes) most = std::max(most, entry.second);
  return most;
}

}  // namespace twinflow::models
