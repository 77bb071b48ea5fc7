#include "engine/sbp/boxing_cache.h"

#include <algorithm>
#include <utility>

namespace twinflow::sbp {

BoxingCache::FactsPtr BoxingCache::Facts(const Shape& shape, const Layout& layout) {
  const std::string key = shape.ToString() + "|" + layout.ToString();
  auto it = facts_.find(key);
  if (it != facts_.end()) return it->second;
  if (facts_.size() >= kLimit) {
    facts_.clear();
    steps_.clear();
    bounds_.clear();
  }
  auto facts = std::make_shared<const LayoutFacts>(ComputeFacts(shape, layout));
  facts_.emplace(key, facts);
  return facts;
}

const BoxingCache::StepPtr* BoxingCache::FindStep(const FactsPtr& from, const FactsPtr& to,
                                                  DType dtype, int kind) const {
  const auto it = steps_.find(StepKey{from, to, dtype, kind});
  return it == steps_.end() ? nullptr : &it->second;
}

BoxingCache::StepPtr BoxingCache::PutStep(const FactsPtr& from, const FactsPtr& to, DType dtype,
                                          int kind, std::optional<BoxingStep> step) {
  StepPtr kept = step ? std::make_shared<const BoxingStep>(std::move(*step)) : nullptr;
  steps_.insert_or_assign(StepKey{from, to, dtype, kind}, kept);
  return kept;
}

double BoxingCache::SendRecvBound(const FactsPtr& from, const FactsPtr& to, DType dtype) const {
  const auto it = bounds_.find(StepKey{from, to, dtype, kSendRecv});
  return it == bounds_.end() ? 0.0 : it->second;
}

void BoxingCache::RaiseSendRecvBound(const FactsPtr& from, const FactsPtr& to, DType dtype,
                                     double bound) {
  double& known = bounds_[StepKey{from, to, dtype, kSendRecv}];
  known = std::max(known, bound);
}

}  // namespace twinflow::sbp
