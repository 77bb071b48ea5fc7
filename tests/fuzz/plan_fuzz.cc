// libFuzzer target: the Plan loader. Any bytes are a Plan that validates or a PlanError; bytes
// that parse as a protobuf are also restamped with their own content hash, so the validator
// sees what the hash check would otherwise stop.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/core/error.h"
#include "engine/plan/plan_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    twinflow::plan::ParsePlan(bytes, "fuzz");
  } catch (const twinflow::PlanError&) {
  }
  twinflow::plan::Plan plan;
  const google::protobuf::LogSilencer silence;
  if (!plan.ParseFromString(bytes)) return 0;
  plan.set_version(twinflow::plan::kPlanVersion);
  plan.set_content_hash(twinflow::plan::ContentHash(plan));
  try {
    twinflow::plan::ParsePlan(plan.SerializeAsString(), "fuzz");
  } catch (const twinflow::PlanError&) {
  }
  return 0;
}
