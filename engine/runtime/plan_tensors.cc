#include "engine/runtime/plan_tensors.h"

#include <vector>

#include "engine/core/error.h"
#include "engine/plan/plan_enums.h"

namespace twinflow::runtime {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 48;

}  // namespace

Shape ToShape(const plan::TensorDesc& desc, const std::string& what) {
  std::vector<int64_t> dims;
  int64_t numel = 1;
  for (int64_t d : desc.shape()) {
    if (d < 0 || d > kMaxElements || (d > 0 && numel > kMaxElements / d)) {
      throw PlanError(what + ": bad tensor extent " + std::to_string(d));
    }
    numel *= d;
    dims.push_back(d);
  }
  return Shape(std::move(dims));
}

DType ToDType(plan::DType dtype, const std::string& what) { return plan::FromProto(dtype, what); }

Region ToRegion(const plan::RegionDesc& desc, const std::string& what) {
  Region region;
  for (const plan::Range& r : desc.ranges()) {
    if (r.begin() < 0 || r.end() < r.begin() || r.end() > kMaxElements) {
      throw PlanError(what + ": bad range [" + std::to_string(r.begin()) + ":" +
                      std::to_string(r.end()) + "]");
    }
    region.ranges.push_back(Range{r.begin(), r.end()});
  }
  return region;
}

Attrs ToAttrs(const plan::OpDesc& op, const std::string& what) {
  Attrs attrs;
  for (const plan::Attr& a : op.attrs()) {
    switch (a.value_case()) {
      case plan::Attr::kI:
        attrs.Set(a.name(), a.i());
        break;
      case plan::Attr::kF:
        attrs.Set(a.name(), a.f());
        break;
      case plan::Attr::kB:
        attrs.Set(a.name(), a.b());
        break;
      case plan::Attr::kS:
        attrs.Set(a.name(), a.s());
        break;
      case plan::Attr::kInts:
        attrs.Set(a.name(),
                  std::vector<int64_t>(a.ints().values().begin(), a.ints().values().end()));
        break;
      default:
        throw PlanError(what + ": attribute '" + a.name() + "' has no value");
    }
  }
  return attrs;
}

bool IsDataRegst(const plan::Regst& regst) {
  return regst.tensor().dtype() != plan::DTYPE_UNSPECIFIED;
}

std::string RegstName(const plan::Plan& plan, int64_t regst) {
  std::string s = "regst " + std::to_string(regst);
  if (regst >= 0 && regst < plan.regsts_size()) {
    const int64_t producer = plan.regsts(static_cast<int>(regst)).producer();
    if (producer >= 0 && producer < plan.tasks_size()) {
      s += " (of task '" + plan.tasks(static_cast<int>(producer)).name() + "')";
    }
  }
  return s;
}

}  // namespace twinflow::runtime
