#pragma once
// The one place where the Plan's proto enums meet the engine's C++ enums (engine/core). The
// compiler writes Plans with ToProto; executors, the simulator and the validator read them
// with the From* functions, which throw PlanError naming `what` for a value that is
// unspecified or out of range (a hostile Plan), so that nobody switches on raw proto values.
#include <optional>
#include <string>

#include "engine/core/collective_kind.h"
#include "engine/core/device_type.h"
#include "engine/core/dtype.h"
#include "engine/core/reduce_op.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::plan {

plan::DType ToProto(twinflow::DType dtype);
plan::DeviceType ToProto(twinflow::DeviceType type);
plan::CollectiveKind ToProto(twinflow::CollectiveKind kind);
plan::ReduceOp ToProto(twinflow::ReduceOp op);
plan::ReduceOp ToProto(std::optional<twinflow::ReduceOp> op);  // nullopt: REDUCE_NONE

twinflow::DType FromProto(plan::DType dtype, const std::string& what);
twinflow::DeviceType FromProto(plan::DeviceType type, const std::string& what);
twinflow::CollectiveKind FromProto(plan::CollectiveKind kind, const std::string& what);
// nullopt for REDUCE_NONE.
std::optional<twinflow::ReduceOp> FromProto(plan::ReduceOp op, const std::string& what);

// Names for messages, "f32", "cpu", "sum", ... ("none", and "unspecified" or the
// number for a value out of range), from the engine's name tables.
std::string EnumName(plan::DType dtype);
std::string EnumName(plan::DeviceType type);
std::string EnumName(plan::CollectiveKind kind);
std::string EnumName(plan::ReduceOp op);

}  // namespace twinflow::plan
