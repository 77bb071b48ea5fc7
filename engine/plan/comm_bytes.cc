#include "engine/plan/comm_bytes.h"

#include <algorithm>

namespace twinflow::plan {

int64_t CommBytes(const Plan& plan, const Task& t) {
  if (t.kind() != COLLECTIVE && t.kind() != SEND && t.kind() != RECV && t.kind() != COPY) {
    return -1;
  }
  const auto valid = [&](int64_t r) { return r >= 0 && r < plan.regsts_size(); };
  int64_t inputs = 0;
  int64_t summed = 0;
  for (int64_t r : t.consumed_regsts()) {
    if (!valid(r) || plan.regsts(static_cast<int>(r)).tensor().dtype() == DTYPE_UNSPECIFIED)
      continue;
    ++inputs;
    summed += plan.regsts(static_cast<int>(r)).bytes_per_slot();
  }
  if (t.kind() == COLLECTIVE && inputs > 1) return summed;
  int64_t bytes = 0;
  for (const auto* list : {&t.consumed_regsts(), &t.produced_regsts()}) {
    for (int64_t r : *list) {
      if (valid(r)) bytes = std::max(bytes, plan.regsts(static_cast<int>(r)).bytes_per_slot());
    }
  }
  return bytes;
}

}  // namespace twinflow::plan
