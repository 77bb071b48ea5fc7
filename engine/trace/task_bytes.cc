#include "engine/trace/task_bytes.h"

namespace twinflow::trace {

int64_t OutputBytes(const plan::Plan& plan, const plan::Task& t) {
  int64_t bytes = 0;
  for (int64_t r : t.produced_regsts()) {
    if (r >= 0 && r < plan.regsts_size())
      bytes += plan.regsts(static_cast<int>(r)).bytes_per_slot();
  }
  return bytes;
}

}  // namespace twinflow::trace
