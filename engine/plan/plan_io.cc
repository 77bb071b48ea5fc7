#include "engine/plan/plan_io.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
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

std::string ContentHash(const Plan& plan) {
  if (plan.content_hash().empty()) return Digest(Serialize(plan));
  Plan copy = plan;
  copy.clear_content_hash();
  return Digest(Serialize(copy));
}

void SavePlan(Plan plan, const std::string& path) {
  plan.set_version(kPlanVersion);
  plan.clear_content_hash();
  plan.set_content_hash(ContentHash(plan));
  try {
    WriteFileAtomically(path, Serialize(plan));
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
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw PlanError("cannot read plan file '" + path + "': it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PlanError("cannot read plan file '" + path + "': no such file or unreadable");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw PlanError("cannot read plan file '" + path + "': cannot tell its size");
  if (size >= kMaxPlanBytes) {
    throw PlanError("plan file '" + path + "' has " + std::to_string(size) +
                    " bytes: too large (at most 2 GiB)");
  }
  in.seekg(0, std::ios::beg);
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), size);
  if (in.gcount() != size) throw PlanError("cannot read plan file '" + path + "': read failed");
  return ParsePlan(bytes, path);
}

}  // namespace twinflow::plan
