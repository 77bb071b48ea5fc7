// Tensor descriptions and regions as ValidatePlan checks them (dtype spelling, sizes,
// regions inside shapes).
#include <algorithm>
#include <string>

#include "engine/core/dtype.h"
#include "engine/plan/plan_enums.h"
#include "engine/plan/plan_validate_internal.h"

namespace twinflow::plan::validation {

bool SameDesc(const TensorDesc& a, const TensorDesc& b) {
  return a.dtype() == b.dtype() &&
         std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end());
}

std::string DescText(const TensorDesc& d) {
  std::string text = EnumName(d.dtype()) + "[";
  for (int i = 0; i < d.shape_size() && i < kMaxRank + 1; ++i) {
    text += (i ? "," : "") + Str(d.shape(i));
  }
  return text + "]";
}

int64_t TensorBytes(const TensorDesc& desc, const std::string& what) {
  const twinflow::DType dtype = FromProto(desc.dtype(), what);
  if (desc.shape_size() > kMaxRank)
    Fail(what + " has rank " + Str(desc.shape_size()) + " (at most 16)");
  int64_t numel = 1;
  for (int64_t dim : desc.shape()) {
    if (dim < 0) Fail(what + " has a negative dimension in shape " + DescText(desc));
    if (dim > 0 && numel > kMaxBytes / dim)
      Fail(what + " shape " + DescText(desc) + " is too large");
    numel *= dim;
  }
  if (numel > kMaxBytes / DTypeSize(dtype))
    Fail(what + " shape " + DescText(desc) + " is too large");
  return numel * DTypeSize(dtype);
}

void CheckRegion(const RegionDesc& region, const TensorDesc* logical, const TensorDesc& physical,
                 const std::string& what, int64_t shorter_by_at_most) {
  if (region.ranges_size() != physical.shape_size()) {
    Fail(what + " has " + Str(region.ranges_size()) + " ranges for a tensor of rank " +
         Str(physical.shape_size()));
  }
  for (int d = 0; d < region.ranges_size(); ++d) {
    const Range& r = region.ranges(d);
    if (r.begin() < 0 || r.end() < r.begin() ||
        (logical != nullptr && r.end() > logical->shape(d))) {
      Fail(what + " axis " + Str(d) + " range [" + Str(r.begin()) + ":" + Str(r.end()) +
           ") is not inside the logical shape" + (logical ? " " + DescText(*logical) : ""));
    }
    const int64_t length = r.end() - r.begin();
    if (length > physical.shape(d) || length < physical.shape(d) - shorter_by_at_most) {
      Fail(what + " axis " + Str(d) + " range [" + Str(r.begin()) + ":" + Str(r.end()) +
           ") does not match the physical extent " + Str(physical.shape(d)));
    }
  }
}

bool RegionInside(const RegionDesc& inner, const RegionDesc& outer) {
  if (inner.ranges_size() != outer.ranges_size()) return false;
  for (int d = 0; d < inner.ranges_size(); ++d) {
    if (inner.ranges(d).begin() < outer.ranges(d).begin() ||
        inner.ranges(d).end() > outer.ranges(d).end()) {
      return false;
    }
  }
  return true;
}

}  // namespace twinflow::plan::validation
