#pragma once
// Conversions from the Plan's protobuf descriptions to engine/core types. A Plan may be
// hand-built or hostile, so every conversion checks what it reads and throws PlanError naming
// `what` (a task or register) instead of producing a tensor that could overrun memory.
#include <cstdint>
#include <string>

#include "engine/core/attrs.h"
#include "engine/core/dtype.h"
#include "engine/core/region.h"
#include "engine/core/shape.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::runtime {

// Extents must be non-negative and the element count must fit comfortably in int64.
Shape ToShape(const plan::TensorDesc& desc, const std::string& what);
DType ToDType(plan::DType dtype, const std::string& what);  // plan_enums.h FromProto
Region ToRegion(const plan::RegionDesc& desc, const std::string& what);
Attrs ToAttrs(const plan::OpDesc& op, const std::string& what);

// A register that carries a tensor; a control register has no dtype and no bytes.
bool IsDataRegst(const plan::Regst& regst);
std::string RegstName(const plan::Plan& plan, int64_t regst);  // "regst 7 (of task 'x@0')"

}  // namespace twinflow::runtime
