#include "engine/core/error.h"

namespace twinflow {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "InvalidArgument";
    case ErrorKind::kShape: return "Shape";
    case ErrorKind::kSbp: return "Sbp";
    case ErrorKind::kPlan: return "Plan";
    case ErrorKind::kComm: return "Comm";
    case ErrorKind::kTimeout: return "Timeout";
    case ErrorKind::kOutOfMemory: return "OutOfMemory";
  }
  return "Unknown";
}

Error::Error(ErrorKind kind, const std::string& message)
    : std::runtime_error(std::string(ErrorKindName(kind)) + " error: " + message), kind_(kind) {}

}  // namespace twinflow
