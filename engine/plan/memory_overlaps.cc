#include "engine/plan/memory_overlaps.h"

#include <algorithm>
#include <map>
#include <set>

namespace twinflow::plan {
namespace {

// The pairs of registers (lower id first) meant to share bytes: each in-place all_reduce's
// data input and output, and each in-place REPEAT's input with its output; the outputs of the
// REPEATs reading one input in place share them too, and each such output's slots each other.
std::set<std::pair<int64_t, int64_t>> InPlacePairs(const Plan& plan) {
  std::set<std::pair<int64_t, int64_t>> pairs;
  std::map<int64_t, std::vector<int64_t>> borrowers;  // input -> in-place REPEAT outputs
  for (const Task& t : plan.tasks()) {
    for (const auto& [in, out] : InPlaceRegsts(plan, t)) {
      pairs.insert({std::min(in, out), std::max(in, out)});
    }
    if (const auto io = RepeatInPlaceRegsts(plan, t)) borrowers[io->first].push_back(io->second);
  }
  for (auto& [input, outputs] : borrowers) {
    outputs.push_back(input);
    for (int64_t a : outputs) {
      for (int64_t b : outputs) {
        if (a <= b && (a != b || a != input)) pairs.insert({a, b});
      }
    }
  }
  return pairs;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> DataPairs(const Plan& plan, const Task& task) {
  const auto data = [&](const google::protobuf::RepeatedField<google::protobuf::int64>& regsts) {
    std::vector<int64_t> found;
    for (int64_t r : regsts) {
      if (r >= 0 && r < plan.regsts_size() &&
          plan.regsts(static_cast<int>(r)).tensor().dtype() != DTYPE_UNSPECIFIED) {
        found.push_back(r);
      }
    }
    return found;
  };
  const std::vector<int64_t> in = data(task.consumed_regsts());
  const std::vector<int64_t> out = data(task.produced_regsts());
  std::vector<std::pair<int64_t, int64_t>> pairs;
  if (in.size() != out.size()) return pairs;
  for (size_t k = 0; k < in.size(); ++k) pairs.emplace_back(in[k], out[k]);
  return pairs;
}

std::vector<std::pair<int64_t, int64_t>> InPlaceRegsts(const Plan& plan, const Task& task) {
  if (task.kind() != COLLECTIVE || !task.collective().in_place()) return {};
  return DataPairs(plan, task);
}

std::optional<std::pair<int64_t, int64_t>> RepeatInPlaceRegsts(const Plan& plan, const Task& task) {
  if (task.kind() != REPEAT || !task.repeat_in_place()) return std::nullopt;
  const std::vector<std::pair<int64_t, int64_t>> pairs = DataPairs(plan, task);
  if (pairs.size() != 1) return std::nullopt;
  return pairs[0];
}

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
  const std::set<std::pair<int64_t, int64_t>> in_place = InPlacePairs(plan);
  std::vector<std::pair<SlotKey, SlotKey>> pairs;
  for (size_t i = 0; i < extents.size(); ++i) {
    for (size_t j = i + 1; j < extents.size() && extents[j].begin < extents[i].end; ++j) {
      const int64_t a = extents[i].key.regst;
      const int64_t b = extents[j].key.regst;
      if (in_place.count({std::min(a, b), std::max(a, b)}) > 0) continue;
      pairs.emplace_back(extents[i].key, extents[j].key);
    }
  }
  return pairs;
}

}  // namespace twinflow::plan
