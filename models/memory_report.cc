#include "models/memory_report.h"

#include <map>

#include "engine/compiler/plan_memory.h"

namespace twinflow::models {

std::vector<DeviceMemory> DeviceMemories(const plan::Plan& plan, const Strategy& strategy) {
  std::map<int64_t, int64_t> stage_of;                          // device index -> stage
  const int64_t stages = strategy.automatic ? 0 : strategy.pp;  // automatic: all in stage 0
  const int64_t devices = strategy.devices();
  for (int64_t s = 0; s < stages; ++s) {
    const sbp::Placement placement = strategy.StagePlacement(s, devices);
    for (int64_t i = 0; i < placement.size(); ++i) stage_of[placement.device(i).index] = s;
  }
  const std::vector<compiler::CategoryBytes> peaks = compiler::PlannedPeaks(plan);
  std::vector<DeviceMemory> out;
  for (const plan::MemoryPlan& m : plan.memory()) {
    DeviceMemory d;
    d.device = m.device();
    const auto found = stage_of.find(plan.devices(m.device()).index());
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

}  // namespace twinflow::models
