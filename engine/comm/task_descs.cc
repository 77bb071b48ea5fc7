#include "engine/comm/task_descs.h"

#include "engine/core/error.h"
#include "engine/runtime/plan_tensors.h"

namespace twinflow::comm {

// The data register a collective member reads.
const plan::TensorDesc& InputDesc(const plan::Plan& plan, const plan::Task& task) {
  for (int64_t r : task.consumed_regsts()) {
    const plan::Regst& regst = plan.regsts(static_cast<int>(r));
    if (runtime::IsDataRegst(regst)) return regst.tensor();
  }
  throw PlanError("task '" + task.name() + "' has no data input");
}

const plan::TensorDesc& OutputDesc(const plan::Plan& plan, const plan::Task& task) {
  for (int64_t r : task.produced_regsts()) {
    const plan::Regst& regst = plan.regsts(static_cast<int>(r));
    if (runtime::IsDataRegst(regst)) return regst.tensor();
  }
  throw PlanError("task '" + task.name() + "' has no data output");
}

int64_t BytesOf(const plan::TensorDesc& desc, const std::string& what) {
  return runtime::ToShape(desc, what).numel() * DTypeSize(runtime::ToDType(desc.dtype(), what));
}

Tensor Empty(const plan::TensorDesc& desc, const std::string& what) {
  return Tensor(runtime::ToShape(desc, what), runtime::ToDType(desc.dtype(), what));
}

}  // namespace twinflow::comm
