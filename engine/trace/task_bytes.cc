#include "engine/trace/task_bytes.h"

#include <algorithm>

namespace twinflow::trace {

int64_t CommBytes(const plan::Plan& plan, const plan::Task& t) {
  if (t.kind() != plan::COLLECTIVE && t.kind() != plan::SEND && t.kind() != plan::RECV &&
      t.kind() != plan::COPY) {
    return -1;
  }
  int64_t bytes = 0;
  for (const auto* list : {&t.consumed_regsts(), &t.produced_regsts()}) {
    for (int64_t r : *list) {
      if (r >= 0 && r < plan.regsts_size())
        bytes = std::max(bytes, plan.regsts(static_cast<int>(r)).bytes_per_slot());
    }
  }
  return bytes;
}

int64_t OutputBytes(const plan::Plan& plan, const plan::Task& t) {
  int64_t bytes = 0;
  for (int64_t r : t.produced_regsts()) {
    if (r >= 0 && r < plan.regsts_size())
      bytes += plan.regsts(static_cast<int>(r)).bytes_per_slot();
  }
  return bytes;
}

}  // namespace twinflow::trace
