#pragma once
// Which parts of a run a trace keeps: some devices, some task kinds. A whole run of a large
// Plan traces millions of acts; a filter keeps the file to what is being looked at.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/plan/plan.pb.h"

namespace twinflow::trace {

struct TraceFilter {
  // Inclusive ranges of device indices (Device.index); empty: all.
  std::vector<std::pair<int64_t, int64_t>> devices;
  std::vector<plan::TaskKind> kinds;  // empty: all

  bool KeepsDevice(int64_t index) const;
  bool KeepsKind(plan::TaskKind kind) const;
};

// From --trace-devices ("0-7,16"; empty: all) and --trace-kinds ("compute,collective", task
// kind names in any case; empty: all). InvalidArgumentError naming the bad item.
TraceFilter ParseTraceFilter(const std::string& devices, const std::string& kinds);

}  // namespace twinflow::trace
