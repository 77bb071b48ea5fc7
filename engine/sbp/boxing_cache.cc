#include "engine/sbp/boxing_cache.h"

#include <utility>

namespace twinflow::sbp {

BoxingCache::FactsPtr BoxingCache::Facts(const Shape& shape, const Layout& layout) {
  const std::string key = shape.ToString() + "|" + layout.ToString();
  auto it = facts_.find(key);
  if (it != facts_.end()) return it->second;
  if (facts_.size() >= kLimit) {
    facts_.clear();
    steps_.clear();
  }
  auto facts = std::make_shared<const LayoutFacts>(ComputeFacts(shape, layout));
  facts_.emplace(key, facts);
  return facts;
}

const std::optional<BoxingStep>* BoxingCache::FindStep(const FactsPtr& from, const FactsPtr& to,
                                                       DType dtype, int kind) const {
  const auto it = steps_.find(StepKey{from, to, dtype, kind});
  return it == steps_.end() ? nullptr : &it->second;
}

const std::optional<BoxingStep>& BoxingCache::PutStep(const FactsPtr& from, const FactsPtr& to,
                                                      DType dtype, int kind,
                                                      std::optional<BoxingStep> step) {
  return steps_.insert_or_assign(StepKey{from, to, dtype, kind}, std::move(step)).first->second;
}

}  // namespace twinflow::sbp
