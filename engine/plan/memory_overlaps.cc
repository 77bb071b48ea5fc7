#include "engine/plan/memory_overlaps.h"

#include <algorithm>

namespace twinflow::plan {

std::vector<std::pair<SlotKey, SlotKey>> OverlappingSlots(const Plan& plan,
                                                          const MemoryPlan& memory) {
  struct Extent {
    int64_t begin = 0;
    int64_t end = 0;
    SlotKey key;
  };
  std::vector<Extent> extents;
  for (const SlotOffset& o : memory.offsets()) {
    if (o.regst() < 0 || o.regst() >= plan.regsts_size()) continue;
    const int64_t bytes = plan.regsts(static_cast<int>(o.regst())).bytes_per_slot();
    if (bytes <= 0) continue;
    extents.push_back({o.offset(), o.offset() + bytes, {o.regst(), o.slot()}});
  }
  std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.key.regst < b.key.regst;
  });
  std::vector<std::pair<SlotKey, SlotKey>> pairs;
  for (size_t i = 0; i < extents.size(); ++i) {
    for (size_t j = i + 1; j < extents.size() && extents[j].begin < extents[i].end; ++j) {
      pairs.emplace_back(extents[i].key, extents[j].key);
    }
  }
  return pairs;
}

}  // namespace twinflow::plan
