#include "engine/comm/task_descs.h"

#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/plan_tensors.h"

namespace twinflow::comm {

namespace {

plan::TensorDesc Packed(const plan::Plan& plan,
                        const google::protobuf::RepeatedField<google::protobuf::int64>& regsts,
                        const std::string& what) {
  std::vector<const plan::TensorDesc*> data;
  for (int64_t r : regsts) {
    const plan::Regst& regst = plan.regsts(static_cast<int>(r));
    if (runtime::IsDataRegst(regst)) data.push_back(&regst.tensor());
  }
  if (data.empty()) throw PlanError(what);
  if (data.size() == 1) return *data[0];
  int64_t elements = 0;
  for (const plan::TensorDesc* d : data) elements += runtime::ToShape(*d, what).numel();
  plan::TensorDesc packed;
  packed.add_shape(elements);
  packed.set_dtype(data[0]->dtype());
  return packed;
}

}  // namespace

plan::TensorDesc InputDesc(const plan::Plan& plan, const plan::Task& task) {
  return Packed(plan, task.consumed_regsts(), "task '" + task.name() + "' has no data input");
}

plan::TensorDesc OutputDesc(const plan::Plan& plan, const plan::Task& task) {
  return Packed(plan, task.produced_regsts(), "task '" + task.name() + "' has no data output");
}

int64_t BytesOf(const plan::TensorDesc& desc, const std::string& what) {
  return runtime::ToShape(desc, what).numel() * DTypeSize(runtime::ToDType(desc.dtype(), what));
}

Tensor Empty(const plan::TensorDesc& desc, const std::string& what) {
  return Tensor(runtime::ToShape(desc, what), runtime::ToDType(desc.dtype(), what));
}

}  // namespace twinflow::comm
