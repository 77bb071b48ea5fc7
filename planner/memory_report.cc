#include "planner/memory_report.h"

#include <algorithm>
#include <map>

#include "engine/compiler/plan_memory.h"

namespace twinflow::planner {

std::vector<DeviceMemory> DeviceMemories(const plan::Plan& plan) {
  std::map<int32_t, int64_t> stage_of;  // Plan device -> its lowest task stage
  for (const plan::Task& t : plan.tasks()) {
    const auto [it, added] = stage_of.emplace(t.device(), t.stage());
    if (!added) it->second = std::min<int64_t>(it->second, t.stage());
  }
  const std::vector<compiler::CategoryBytes> peaks = compiler::PlannedPeaks(plan);
  std::vector<DeviceMemory> out;
  for (const plan::MemoryPlan& m : plan.memory()) {
    DeviceMemory d;
    d.device = m.device();
    const auto found = stage_of.find(m.device());
    d.stage = found == stage_of.end() ? 0 : found->second;
    d.arena_bytes = m.arena_bytes();
    d.peak_bytes = m.peak_bytes();
    d.bytes = peaks[m.device()];
    out.push_back(d);
  }
  return out;
}

std::vector<StageMemory> StageMemories(const std::vector<DeviceMemory>& devices) {
  std::map<int64_t, StageMemory> stages;
  for (const DeviceMemory& d : devices) {
    StageMemory& s = stages[d.stage];
    if (s.devices.empty() || d.arena_bytes > s.fullest.arena_bytes) s.fullest = d;
    s.stage = d.stage;
    s.devices.push_back(d.device);
  }
  std::vector<StageMemory> out;
  for (auto& [stage, s] : stages) out.push_back(std::move(s));
  return out;
}

std::vector<RegisterMemory> LargestRegisters(const plan::Plan& plan, int32_t device, int64_t n) {
  const std::vector<compiler::MemoryCategory> category = compiler::RegstCategories(plan);
  const std::vector<bool> shared =
      compiler::ChainResidentRegsts(plan, compiler::FindTaskChains(plan));
  std::vector<RegisterMemory> out;
  for (const plan::Regst& r : plan.regsts()) {
    const plan::Task& producer = plan.tasks(static_cast<int>(r.producer()));
    if (producer.device() != device || r.bytes_per_slot() == 0 || producer.repeat_in_place())
      continue;  // an in-place REPEAT's output is its input's bytes
    out.push_back(RegisterMemory{r.id(), producer.name(), category[r.id()], r.bytes_per_slot(),
                                 r.slots(), shared[r.id()]});
  }
  const auto total = [](const RegisterMemory& m) { return m.bytes_per_slot * m.slots; };
  std::sort(out.begin(), out.end(), [&](const RegisterMemory& a, const RegisterMemory& b) {
    if (a.shared != b.shared) return !a.shared;
    return total(a) != total(b) ? total(a) > total(b) : a.regst < b.regst;
  });
  if (static_cast<int64_t>(out.size()) > n)
    out.resize(static_cast<size_t>(std::max<int64_t>(n, 0)));
  return out;
}

}  // namespace twinflow::planner
