#include "engine/plan/plan_io.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>

#include "engine/core/error.h"
#include "engine/core/file_io.h"
#include "engine/plan/plan_validate.h"

namespace twinflow::plan {
namespace {

// protobuf cannot parse messages of 2 GiB or more; refuse before reading such a file.
constexpr int64_t kMaxPlanBytes = int64_t{2} << 30;

std::string Serialize(const Plan& plan) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    // Map-free today, but deterministic output is what the hash promises, so ask for it.
    coded.SetSerializationDeterministic(true);
    plan.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// At most 64 characters of a hostile string in a message.
std::string Clip(const std::string& text) {
  return text.size() <= 64 ? text : text.substr(0, 64) + "...";
}

}  // namespace

namespace {

constexpr uint32_t kVersionTag = (1 << 3) | 0;      // field 1, varint
constexpr uint32_t kContentHashTag = (2 << 3) | 2;  // field 2, length-delimited

// `bytes`, a Plan serialised with content_hash set, as it would be with content_hash empty:
// generated code writes fields in number order, so the hash is the first field after the
// version and is cut out of the bytes. nullopt if it is not there (then the caller copies the
// Plan). A 100-device Plan is hundreds of MB; copying it to clear one field cost a fifth of a
// compile.
std::optional<std::string> WithoutContentHash(const std::string& bytes) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  uint32_t tag = in.ReadTag();
  uint32_t value = 0;
  if (tag == kVersionTag && !in.ReadVarint32(&value)) return std::nullopt;
  const int start = tag == kVersionTag ? in.CurrentPosition() : 0;
  if (tag == kVersionTag) tag = in.ReadTag();
  if (tag != kContentHashTag || !in.ReadVarint32(&value) || !in.Skip(static_cast<int>(value))) {
    return std::nullopt;
  }
  std::string stripped = bytes.substr(0, static_cast<size_t>(start));
  stripped.append(bytes, static_cast<size_t>(in.CurrentPosition()), std::string::npos);
  return stripped;
}

}  // namespace

std::string ContentHash(const Plan& plan) {
  const std::string bytes = Serialize(plan);
  if (plan.content_hash().empty()) return Digest(bytes);
  if (const auto stripped = WithoutContentHash(bytes)) return Digest(*stripped);
  Plan copy = plan;
  copy.clear_content_hash();
  return Digest(Serialize(copy));
}

void SavePlan(const Plan& plan, const std::string& path) {
  // A Plan stamped with this version and its own hash (every compiled or loaded one) is written
  // as it is; anything else is stamped on a copy.
  std::string bytes = Serialize(plan);
  const std::optional<std::string> stripped = WithoutContentHash(bytes);
  if (plan.version() != kPlanVersion || !stripped || Digest(*stripped) != plan.content_hash()) {
    Plan stamped = plan;
    stamped.set_version(kPlanVersion);
    stamped.clear_content_hash();
    stamped.set_content_hash(Digest(Serialize(stamped)));
    bytes = Serialize(stamped);
  }
  try {
    WriteFileAtomically(path, bytes);
  } catch (const Error& e) {
    throw PlanError("plan file: " + e.message());
  }
}

Plan ParsePlan(const std::string& bytes, const std::string& origin) {
  if (static_cast<int64_t>(bytes.size()) >= kMaxPlanBytes) {
    throw PlanError(origin + ": plan of " + std::to_string(bytes.size()) +
                    " bytes is too large (at most 2 GiB)");
  }
  Plan plan;
  // protobuf logs what it dislikes (invalid UTF-8, ...) to stderr; the PlanError says it.
  const google::protobuf::LogSilencer silence;
  if (!plan.ParseFromString(bytes)) {
    throw PlanError(origin + ": not a valid Plan protobuf (truncated or corrupt)");
  }
  if (plan.version() != kPlanVersion) {
    throw PlanError(origin + ": plan version " + std::to_string(plan.version()) +
                    " is not supported (this build reads version " + std::to_string(kPlanVersion) +
                    ")");
  }
  const std::string expected = ContentHash(plan);
  if (plan.content_hash() != expected) {
    throw PlanError(origin + ": content hash '" + Clip(plan.content_hash()) +
                    "' does not match the contents ('" + expected + "'): the file is corrupt");
  }
  try {
    ValidatePlan(plan);
  } catch (const Error& e) {
    RethrowPrefixed(e, origin + ": ");
  }
  return plan;
}

Plan LoadPlan(const std::string& path) {
  std::string bytes;
  try {
    bytes = ReadFile(path, kMaxPlanBytes - 1);
  } catch (const Error& e) {
    throw PlanError("plan file: " + e.message());
  }
  return ParsePlan(bytes, path);
}

}  // namespace twinflow::plan
