#include "engine/sbp/boxing_cache.h"

#include <algorithm>
#include <utility>

namespace twinflow::sbp {
namespace {

// The entry of `key` in the young generation, promoted there from the old one when found
// only in that; null when in neither.
template <typename Map>
typename Map::mapped_type* Promoted(Map& young, Map& old, const typename Map::key_type& key) {
  if (auto it = young.find(key); it != young.end()) return &it->second;
  auto it = old.find(key);
  if (it == old.end()) return nullptr;
  return &young.emplace(key, it->second).first->second;
}

}  // namespace

BoxingCache::FactsPtr BoxingCache::Facts(const Shape& shape, const Layout& layout) {
  const std::string key = shape.ToString() + "|" + layout.ToString();
  if (FactsPtr* known = Promoted(young_.facts, old_.facts, key)) return *known;
  auto facts = std::make_shared<const LayoutFacts>(ComputeFacts(shape, layout));
  young_regions_ += static_cast<int64_t>(facts->regions.size());
  if (young_regions_ > kRegionLimit) {  // the old generation goes, the young one ages
    old_ = std::move(young_);
    young_ = Generation{};
    young_regions_ = static_cast<int64_t>(facts->regions.size());
  }
  young_.facts.emplace(key, facts);
  return facts;
}

const BoxingCache::StepPtr* BoxingCache::FindStep(const FactsPtr& from, const FactsPtr& to,
                                                  DType dtype, int kind) {
  return Promoted(young_.steps, old_.steps, StepKey{from, to, dtype, kind});
}

BoxingCache::StepPtr BoxingCache::PutStep(const FactsPtr& from, const FactsPtr& to, DType dtype,
                                          int kind, std::optional<BoxingStep> step) {
  StepPtr kept = step ? std::make_shared<const BoxingStep>(std::move(*step)) : nullptr;
  young_.steps.insert_or_assign(StepKey{from, to, dtype, kind}, kept);
  return kept;
}

double BoxingCache::SendRecvBound(const FactsPtr& from, const FactsPtr& to, DType dtype) {
  const double* known = Promoted(young_.bounds, old_.bounds, StepKey{from, to, dtype, kSendRecv});
  return known ? *known : 0.0;
}

void BoxingCache::RaiseSendRecvBound(const FactsPtr& from, const FactsPtr& to, DType dtype,
                                     double bound) {
  double& known = young_.bounds[StepKey{from, to, dtype, kSendRecv}];
  known = std::max(known, bound);
}

}  // namespace twinflow::sbp
