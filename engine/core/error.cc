#include "engine/core/error.h"

namespace twinflow {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return "InvalidArgument";
    case ErrorKind::kShape:
      return "Shape";
    case ErrorKind::kSbp:
      return "Sbp";
    case ErrorKind::kPlan:
      return "Plan";
    case ErrorKind::kComm:
      return "Comm";
    case ErrorKind::kTimeout:
      return "Timeout";
    case ErrorKind::kOutOfMemory:
      return "OutOfMemory";
    case ErrorKind::kDevice:
      return "Device";
    case ErrorKind::kNumerics:
      return "Numerics";
  }
  return "Unknown";
}

Error::Error(ErrorKind kind, const std::string& message)
    : std::runtime_error(std::string(ErrorKindName(kind)) + " error: " + message),
      kind_(kind),
      message_(message) {}

void RethrowPrefixed(const Error& e, const std::string& prefix) {
  const std::string message = prefix + e.message();
  switch (e.kind()) {
    case ErrorKind::kInvalidArgument:
      throw InvalidArgumentError(message);
    case ErrorKind::kShape:
      throw ShapeError(message);
    case ErrorKind::kSbp:
      throw SbpError(message);
    case ErrorKind::kPlan:
      throw PlanError(message);
    case ErrorKind::kComm:
      throw CommError(message);
    case ErrorKind::kTimeout:
      throw TimeoutError(message);
    case ErrorKind::kOutOfMemory:
      throw OutOfMemoryError(message);
    case ErrorKind::kDevice:
      throw DeviceError(message);
    case ErrorKind::kNumerics:
      throw NumericsError(message);
  }
  throw Error(e.kind(), message);
}

}  // namespace twinflow
