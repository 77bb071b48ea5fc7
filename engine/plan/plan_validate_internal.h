#pragma once
// Pieces of ValidatePlan shared by its files (plan_validate*.cc); not for use elsewhere. The
// checks live in one Validator class because they share the per-task sorted consumed lists;
// its methods are split by concept: structure (plan_validate.cc), task kinds and collectives
// (plan_validate_kinds.cc), memory plans (plan_validate_memory.cc) and feed/fetch/variable
// bindings (plan_validate_bindings.cc). Tensor and region helpers are in
// plan_validate_tensors.cc.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::plan::validation {

// Bounds on values a hostile file could set to anything; nothing here allocates per slot,
// piece or byte, but the executors would.
constexpr int64_t kMaxSlots = int64_t{1} << 20;
constexpr int64_t kMaxLag = int64_t{1} << 20;
constexpr int64_t kMaxPiecesPerStep = int64_t{1} << 20;
constexpr int64_t kMaxBytes = int64_t{1} << 50;
constexpr int kMaxRank = 16;
constexpr int kMaxStream = 1024;

[[noreturn]] inline void Fail(const std::string& message) { throw PlanError(message); }

// Names from the file may be huge; messages quote at most 64 characters of them.
inline std::string Clip(const std::string& text) {
  return text.size() <= 64 ? text : text.substr(0, 64) + "...";
}

inline std::string Str(int64_t v) { return std::to_string(v); }

bool SameDesc(const TensorDesc& a, const TensorDesc& b);
std::string DescText(const TensorDesc& d);
// Bytes of a (non-control) tensor description; `what` names it in messages.
int64_t TensorBytes(const TensorDesc& desc, const std::string& what);
// A region of `rank` axes with 0 <= begin <= end, whose extents equal `extents` when given.
void CheckRegion(const RegionDesc& region, const TensorDesc* logical, const TensorDesc& physical,
                 const std::string& what, int64_t shorter_by_at_most = 0);
bool RegionInside(const RegionDesc& inner, const RegionDesc& outer);

// Lifetime: keeps `plan` by reference for the one ValidatePlan call that makes it.
class Validator {
 public:
  explicit Validator(const Plan& plan) : plan_(plan) {}

  // Sorted copies of every task's consumed list, so that membership tests stay O(log n) on
  // hostile plans with huge lists.
  bool Consumes(int64_t t, int64_t r) const {
    return std::binary_search(consumed_[t].begin(), consumed_[t].end(), r);
  }

  void Run();

 private:
  std::string TaskText(int64_t t) const {
    return "task " + Str(t) + " '" + Clip(plan_.tasks(t).name()) + "'";
  }
  std::string RegstText(int64_t r) const { return "regst " + Str(r); }
  bool IsControl(int64_t r) const { return plan_.regsts(r).tensor().dtype() == DTYPE_UNSPECIFIED; }
  int64_t NumDevices() const { return plan_.devices_size(); }

  // plan_validate.cc
  void CheckHeader() const;
  void CheckDevicesAndGroups() const;
  void CheckRegsts() const;
  void CheckOrderCounts(int64_t regst) const;
  void CheckTaskReferences();
  void CheckTraits(int64_t t) const;
  void CheckCrossReferences() const;
  void CheckAcyclic() const;
  // plan_validate_kinds.cc
  void CheckTaskKind(int64_t t) const;
  void CheckRateChange(int64_t t, int64_t in, int64_t out) const;
  void CheckCompute(int64_t t, const std::vector<int64_t>& in,
                    const std::vector<int64_t>& out) const;
  void CheckTransfers(int64_t t, const std::vector<int64_t>& out) const;
  void CheckCollectives() const;
  void CheckCollectivePairs(int64_t t, const std::vector<int64_t>& in,
                            const std::vector<int64_t>& out) const;
  void CheckRanks() const;
  // plan_validate_memory.cc
  void CheckMemory() const;
  void CheckAligned(int64_t device, const SlotOffset& s) const;
  // plan_validate_bindings.cc
  void CheckBindings() const;

  const Plan& plan_;
  std::vector<std::vector<int64_t>> consumed_;
};

}  // namespace twinflow::plan::validation
