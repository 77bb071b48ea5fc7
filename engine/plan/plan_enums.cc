#include "engine/plan/plan_enums.h"

#include <iterator>

#include "engine/core/error.h"

namespace twinflow::plan {
namespace {

// Each proto enum lists the C++ enum's values in the same order after its UNSPECIFIED 0
// (ReduceOp after REDUCE_NONE as well): a proto value is the C++ value plus `base`.
static_assert(DTYPE_F32 == 1 && DTYPE_F16 == 6 && static_cast<int>(twinflow::DType::kF16) == 5);
static_assert(DEVICE_CPU == 1 && DEVICE_CUDA == 2 &&
              static_cast<int>(twinflow::DeviceType::kCuda) == 1);
static_assert(ALL_GATHER == 1 && BROADCAST == 5 &&
              static_cast<int>(twinflow::CollectiveKind::kBroadcast) == 4);
static_assert(REDUCE_SUM == 2 && REDUCE_MIN == 4 &&
              static_cast<int>(twinflow::ReduceOp::kMin) == 2);

constexpr int kDTypes = static_cast<int>(std::size(kAllDTypes));
constexpr int kDeviceTypes = 2;
constexpr int kCollectiveKinds = static_cast<int>(std::size(kAllCollectiveKinds));
constexpr int kReduceOps = 3;

template <typename Core>
std::optional<Core> ToCore(int value, int base, int count) {
  if (value < base || value >= base + count) return std::nullopt;
  return static_cast<Core>(value - base);
}

std::string Invalid(int value) {
  return value == 0 ? "unspecified" : "value " + std::to_string(value);
}

}  // namespace

plan::DType ToProto(twinflow::DType dtype) {
  return static_cast<plan::DType>(static_cast<int>(dtype) + 1);
}

plan::DeviceType ToProto(twinflow::DeviceType type) {
  return static_cast<plan::DeviceType>(static_cast<int>(type) + 1);
}

plan::CollectiveKind ToProto(twinflow::CollectiveKind kind) {
  return static_cast<plan::CollectiveKind>(static_cast<int>(kind) + 1);
}

plan::ReduceOp ToProto(twinflow::ReduceOp op) {
  return static_cast<plan::ReduceOp>(static_cast<int>(op) + REDUCE_SUM);
}

plan::ReduceOp ToProto(std::optional<twinflow::ReduceOp> op) {
  return op ? ToProto(*op) : REDUCE_NONE;
}

twinflow::DType FromProto(plan::DType dtype, const std::string& what) {
  if (const auto core = ToCore<twinflow::DType>(dtype, 1, kDTypes)) return *core;
  throw PlanError(what + " has no valid dtype (" + Invalid(dtype) + ")");
}

twinflow::DeviceType FromProto(plan::DeviceType type, const std::string& what) {
  if (const auto core = ToCore<twinflow::DeviceType>(type, 1, kDeviceTypes)) return *core;
  throw PlanError(what + " has no valid device type (" + Invalid(type) + ")");
}

twinflow::CollectiveKind FromProto(plan::CollectiveKind kind, const std::string& what) {
  if (const auto core = ToCore<twinflow::CollectiveKind>(kind, 1, kCollectiveKinds)) return *core;
  throw PlanError(what + " has no valid collective kind (" + Invalid(kind) + ")");
}

std::optional<twinflow::ReduceOp> FromProto(plan::ReduceOp op, const std::string& what) {
  if (op == REDUCE_NONE) return std::nullopt;
  if (const auto core = ToCore<twinflow::ReduceOp>(op, REDUCE_SUM, kReduceOps)) return *core;
  throw PlanError(what + " has no valid reduce op (" + Invalid(op) + ")");
}

std::string EnumName(plan::DType dtype) {
  const auto core = ToCore<twinflow::DType>(dtype, 1, kDTypes);
  return core ? DTypeName(*core) : Invalid(dtype);
}

std::string EnumName(plan::DeviceType type) {
  const auto core = ToCore<twinflow::DeviceType>(type, 1, kDeviceTypes);
  return core ? DeviceTypeName(*core) : Invalid(type);
}

std::string EnumName(plan::CollectiveKind kind) {
  const auto core = ToCore<twinflow::CollectiveKind>(kind, 1, kCollectiveKinds);
  return core ? CollectiveKindName(*core) : Invalid(kind);
}

std::string EnumName(plan::ReduceOp op) {
  if (op == REDUCE_NONE) return "none";
  const auto core = ToCore<twinflow::ReduceOp>(op, REDUCE_SUM, kReduceOps);
  return core ? ReduceOpName(*core) : Invalid(op);
}

}  // namespace twinflow::plan
