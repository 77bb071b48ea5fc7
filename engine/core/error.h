#pragma once
// twinflow::Error: every failure the engine reports. A kind says which family it belongs to, so
// front ends can map it (the CLI to exit codes, Python to exception classes); the message names
// the op, tensor, rank or text that was wrong.
#include <stdexcept>
#include <string>

namespace twinflow {

enum class ErrorKind {
  kInvalidArgument,
  kShape,
  kSbp,
  kPlan,
  kComm,
  kTimeout,
  kOutOfMemory,
  kDevice,
  kNumerics
};

const char* ErrorKindName(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message);
  ErrorKind kind() const { return kind_; }
  // The message without the "<Kind> error: " prefix that what() adds, for re-throwing with
  // more context.
  const std::string& message() const { return message_; }

 private:
  ErrorKind kind_;
  std::string message_;
};

// One subclass per kind, so callers can catch the family they handle.
class InvalidArgumentError : public Error {
 public:
  explicit InvalidArgumentError(const std::string& message)
      : Error(ErrorKind::kInvalidArgument, message) {}
};
class ShapeError : public Error {
 public:
  explicit ShapeError(const std::string& message) : Error(ErrorKind::kShape, message) {}
};
class SbpError : public Error {
 public:
  explicit SbpError(const std::string& message) : Error(ErrorKind::kSbp, message) {}
};
class PlanError : public Error {
 public:
  explicit PlanError(const std::string& message) : Error(ErrorKind::kPlan, message) {}
};
class CommError : public Error {
 public:
  explicit CommError(const std::string& message) : Error(ErrorKind::kComm, message) {}
};
class TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& message) : Error(ErrorKind::kTimeout, message) {}
};
class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(const std::string& message) : Error(ErrorKind::kOutOfMemory, message) {}
};

// A failed call into an accelerator's runtime or library (CUDA, cuBLASLt), or a fault a device
// kernel reported (an index out of range); the message names the call or the op.
class DeviceError : public Error {
 public:
  explicit DeviceError(const std::string& message) : Error(ErrorKind::kDevice, message) {}
};

// A NaN or infinity where training needs finite values (RunOptions::check_finite): names the
// op and the element.
class NumericsError : public Error {
 public:
  explicit NumericsError(const std::string& message) : Error(ErrorKind::kNumerics, message) {}
};

// Throws an error of e's kind (so callers catching a family still see it) whose message is
// `prefix` followed by e's message.
[[noreturn]] void RethrowPrefixed(const Error& e, const std::string& prefix);

}  // namespace twinflow
