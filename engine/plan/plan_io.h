#pragma once
// Loading, saving and hashing Plans. Every Plan that enters the process goes through
// ParsePlan, which validates it: a corrupt or hostile file is a PlanError naming the file and
// the problem, never a crash.
#include <cstdint>
#include <string>

#include "engine/plan/plan.pb.h"

namespace twinflow::plan {

// 2: typed enums (dtype, device type, collective kind, reduce op) and task traits.
constexpr uint32_t kPlanVersion = 2;

// Hex digest of the Plan serialised deterministically with content_hash cleared. Ranks compare
// it before they start.
std::string ContentHash(const Plan& plan);

// Stamps version and content hash (unless the Plan carries this version and its own hash
// already), then writes `path` atomically (a temporary file renamed over it), so a reader
// never sees half a Plan. Throws PlanError on I/O failure.
void SavePlan(const Plan& plan, const std::string& path);

// Reads and parses `path`, checks version and hash, and validates. `origin` names the bytes in
// messages (a file name).
Plan LoadPlan(const std::string& path);
Plan ParsePlan(const std::string& bytes, const std::string& origin);

}  // namespace twinflow::plan
