#pragma once
// BoxingPricer: the SBP search's boxing times and plans, each priced once by (tensor meta,
// layouts): models repeat the same edges layer after layer, and pipeline stages repeat them on
// devices shifted by whole nodes, which the cost model prices alike.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/graph/logical_graph.h"
#include "engine/sbp/boxing_cache.h"
#include "engine/sbp/boxing_plan.h"
#include "engine/sbp/boxing_planner.h"
#include "engine/sbp/cost_model.h"

namespace twinflow::compiler {

// Boxing times from one layout to every layout of a placement, by (meta, source layout,
// destination placement). Searches may share one (tune's candidates on one cluster: their
// strategies differ only in what their graphs and pins say, and the same edges recur), as long
// as their cost models price alike.
struct BoxingTimes {
  std::map<std::string, std::map<sbp::NdSbp, double>> from;
  sbp::BoxingCache cache;  // layout facts and priced steps, shared by the searches of `from`
  // Plans by detail, key and shift (BoxingPricer::Plan): a tune's candidates of one family
  // lower the same boxings. Started afresh past kTransferLimit transfers held (plans of a
  // thousand devices carry thousands each).
  std::map<std::string, std::shared_ptr<const sbp::BoxingPlan>> plans;
  int64_t transfers = 0;
  static constexpr int64_t kTransferLimit = int64_t{1} << 21;
};

class BoxingPricer {
 public:
  // The cost model must outlive the pricer (one search). `times`: a cache shared with other
  // searches whose cost models price as this one does; null: the pricer keeps its own.
  BoxingPricer(const sbp::CostModel& cost_model, sbp::BoxingDetail detail,
               std::shared_ptr<BoxingTimes> times = nullptr);

  double Time(const graph::TensorMeta& meta, const sbp::Layout& src, const sbp::Layout& dst);

  // The boxing plan from `src` to `dst`: planned once per (tensor meta, layouts shifted as
  // Time's), then its layouts shifted back, once per shift. The rest of a plan (groups,
  // transfers) counts in parallel indices, which a shift leaves alone.
  std::shared_ptr<const sbp::BoxingPlan> Plan(const graph::TensorMeta& meta, const sbp::Layout& src,
                                              const sbp::Layout& dst);

  // Time() for every pair of `sources` x `targets` on one edge, row by row: the placements
  // are shifted once and each distinct source layout priced once.
  std::vector<double> Times(const graph::TensorMeta& meta, const sbp::Placement& from,
                            const std::vector<const sbp::NdSbp*>& sources, const sbp::Placement& to,
                            const std::vector<const sbp::NdSbp*>& targets);

 private:
  // The times from `from` to every layout on placement `to`, cached.
  const std::map<sbp::NdSbp, double>& TimesFrom(const graph::TensorMeta& meta,
                                                const sbp::Layout& from, const sbp::Placement& to);
  // The largest multiple of the cost model's period that every device id of both placements
  // exceeds.
  int64_t Shift(const sbp::Placement& a, const sbp::Placement& b) const;

  const sbp::CostModel& cost_model_;
  const sbp::BoxingDetail detail_;
  std::shared_ptr<BoxingTimes> times_;
};

}  // namespace twinflow::compiler
