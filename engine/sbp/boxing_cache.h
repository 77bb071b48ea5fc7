#pragma once
// BoxingCache: what the boxing searches of one cost model share (BoxingTimesFrom, one per
// tensor and producer layout): the facts of each (shape, layout) pair (boxing_steps.h:
// physical regions and their grid), and the steps priced between two such layouts (a one-axis
// step or a send-recv, without transfers), which do not depend on where a search started. At
// a thousand devices the SBP search laid out the same layouts' regions six times over and
// priced the same send-recv steps as often.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "engine/sbp/boxing_steps.h"

namespace twinflow::sbp {

class BoxingCache {
 public:
  using FactsPtr = std::shared_ptr<const LayoutFacts>;
  using StepPtr = std::shared_ptr<const BoxingStep>;  // null: there is no such step
  static constexpr int kSendRecv = -1;  // a step's `kind` below: else the mesh axis it changes

  // The facts of `layout` for `shape`, computed on first use.
  FactsPtr Facts(const Shape& shape, const Layout& layout);

  // The step from `from` to `to` of `kind`, for elements of `dtype`, when priced before (its
  // value: null when there is none); null when not. The pointer lives until the next call of
  // Facts; the step it points to as long as its holders keep it.
  const StepPtr* FindStep(const FactsPtr& from, const FactsPtr& to, DType dtype, int kind);
  // Keeps `step` (priced only, no transfers) as that step, and returns it.
  StepPtr PutStep(const FactsPtr& from, const FactsPtr& to, DType dtype, int kind,
                  std::optional<BoxingStep> step);

  // The best lower bound on the send-recv from `from` to `to` found so far (0 when none): a
  // search that finds it over its limit need not compute the bound again.
  double SendRecvBound(const FactsPtr& from, const FactsPtr& to, DType dtype);
  void RaiseSendRecvBound(const FactsPtr& from, const FactsPtr& to, DType dtype, double bound);

 private:
  // Bounded, as a tune of many candidates would otherwise keep every layout it ever priced: two
  // generations, the young one taking what is computed or found in the old; once the young one
  // holds kRegionLimit regions (about 100 bytes each: 1,024 layouts of 1,024 devices) the old
  // one is dropped and the young one ages. Steps and bounds key on the facts they join, which
  // they keep alive, so no freed facts' address is reused under them.
  static constexpr int64_t kRegionLimit = int64_t{1} << 20;
  using StepKey = std::tuple<FactsPtr, FactsPtr, DType, int>;
  struct Generation {
    std::map<std::string, FactsPtr> facts;
    std::map<StepKey, StepPtr> steps;
    std::map<StepKey, double> bounds;  // kind kSendRecv
  };
  Generation young_, old_;
  int64_t young_regions_ = 0;
};

}  // namespace twinflow::sbp
