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
  const StepPtr* FindStep(const FactsPtr& from, const FactsPtr& to, DType dtype, int kind) const;
  // Keeps `step` (priced only, no transfers) as that step, and returns it.
  StepPtr PutStep(const FactsPtr& from, const FactsPtr& to, DType dtype, int kind,
                  std::optional<BoxingStep> step);

  // The best lower bound on the send-recv from `from` to `to` found so far (0 when none): a
  // search that finds it over its limit need not compute the bound again.
  double SendRecvBound(const FactsPtr& from, const FactsPtr& to, DType dtype) const;
  void RaiseSendRecvBound(const FactsPtr& from, const FactsPtr& to, DType dtype, double bound);

 private:
  // Bounded, as a tune of many candidates would otherwise keep every layout it ever priced:
  // past kLimit facts the cache starts afresh.
  static constexpr size_t kLimit = 8192;
  std::map<std::string, FactsPtr> facts_;
  // Keyed by the facts themselves, which the entries keep alive (so no address is reused).
  using StepKey = std::tuple<FactsPtr, FactsPtr, DType, int>;
  std::map<StepKey, StepPtr> steps_;
  std::map<StepKey, double> bounds_;  // kind kSendRecv
};

}  // namespace twinflow::sbp
