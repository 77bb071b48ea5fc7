#include "engine/compiler/boxing_pricer.h"

#include <algorithm>

#include "engine/core/error.h"

namespace twinflow::compiler {
namespace {

double Lookup(const std::map<sbp::NdSbp, double>& times, const sbp::Layout& src,
              const sbp::Layout& dst) {
  const auto time = times.find(dst.nd_sbp);
  if (time == times.end()) {
    throw SbpError("boxing: no plan from " + src.ToString() + " to " + dst.ToString());
  }
  return time->second;
}

sbp::Placement Shifted(const sbp::Placement& placement, int64_t shift) {
  if (shift == 0) return placement;
  std::vector<int64_t> ids = placement.device_ids();
  for (int64_t& id : ids) id -= shift;
  return sbp::Placement(placement.device_type(), ids, placement.hierarchy());
}

}  // namespace

BoxingPricer::BoxingPricer(const sbp::CostModel& cost_model, sbp::BoxingDetail detail,
                           std::shared_ptr<BoxingTimes> times)
    : cost_model_(cost_model),
      detail_(detail),
      times_(times ? std::move(times) : std::make_shared<BoxingTimes>()) {}

double BoxingPricer::Time(const graph::TensorMeta& meta, const sbp::Layout& src,
                          const sbp::Layout& dst) {
  if (src == dst) return 0;
  const int64_t shift = Shift(src.placement, dst.placement);
  return Lookup(
      TimesFrom(meta, {Shifted(src.placement, shift), src.nd_sbp}, Shifted(dst.placement, shift)),
      src, dst);
}

std::shared_ptr<const sbp::BoxingPlan> BoxingPricer::Plan(const graph::TensorMeta& meta,
                                                          const sbp::Layout& src,
                                                          const sbp::Layout& dst) {
  const int64_t shift = Shift(src.placement, dst.placement);
  const sbp::Layout shifted_src{Shifted(src.placement, shift), src.nd_sbp};
  const sbp::Layout shifted_dst{Shifted(dst.placement, shift), dst.nd_sbp};
  const std::string key = std::to_string(static_cast<int>(detail_)) + "|" + meta.ToString() + "|" +
                          shifted_src.ToString() + "|" + shifted_dst.ToString();
  std::map<std::string, std::shared_ptr<const sbp::BoxingPlan>>& plans = times_->plans;
  if (times_->transfers > BoxingTimes::kTransferLimit) {
    plans.clear();
    times_->transfers = 0;
  }
  const auto held = [this](const sbp::BoxingPlan& plan) {
    for (const sbp::BoxingStep& step : plan.steps) {
      times_->transfers += static_cast<int64_t>(step.transfers.size()) + 1;
    }
  };
  auto& planned = plans[key];
  if (!planned) {
    planned = std::make_shared<const sbp::BoxingPlan>(sbp::PlanBoxing(
        meta.shape, meta.dtype, shifted_src, shifted_dst, cost_model_, detail_, &times_->cache));
    held(*planned);
  }
  if (shift == 0) return planned;
  auto& moved = plans[key + "|" + std::to_string(shift)];
  if (!moved) {
    sbp::BoxingPlan plan = *planned;
    plan.src = src;
    plan.dst = dst;
    for (sbp::BoxingStep& step : plan.steps) {
      step.from.placement = Shifted(step.from.placement, -shift);
      step.to.placement = Shifted(step.to.placement, -shift);
    }
    moved = std::make_shared<const sbp::BoxingPlan>(std::move(plan));
    held(*moved);
  }
  return moved;
}

std::vector<double> BoxingPricer::Times(const graph::TensorMeta& meta, const sbp::Placement& from,
                                        const std::vector<const sbp::NdSbp*>& sources,
                                        const sbp::Placement& to,
                                        const std::vector<const sbp::NdSbp*>& targets) {
  const int64_t shift = Shift(from, to);
  const sbp::Placement shifted_from = Shifted(from, shift), shifted_to = Shifted(to, shift);
  std::map<sbp::NdSbp, const std::map<sbp::NdSbp, double>*> rows;
  std::vector<double> out;
  out.reserve(sources.size() * targets.size());
  for (const sbp::NdSbp* s : sources) {
    auto row = rows.find(*s);
    if (row == rows.end())
      row = rows.emplace(*s, &TimesFrom(meta, {shifted_from, *s}, shifted_to)).first;
    for (const sbp::NdSbp* t : targets) {
      const sbp::Layout src{from, *s}, dst{to, *t};
      out.push_back(from == to && *s == *t ? 0.0 : Lookup(*row->second, src, dst));
    }
  }
  return out;
}

const std::map<sbp::NdSbp, double>& BoxingPricer::TimesFrom(const graph::TensorMeta& meta,
                                                            const sbp::Layout& from,
                                                            const sbp::Placement& to) {
  const std::string key = meta.ToString() + "|" + from.ToString() + "|" + to.ToString();
  auto it = times_->from.find(key);
  if (it == times_->from.end()) {
    it = times_->from
             .emplace(key, sbp::BoxingTimesFrom(meta.shape, meta.dtype, from, to, cost_model_,
                                                &times_->cache))
             .first;
  }
  return it->second;
}

int64_t BoxingPricer::Shift(const sbp::Placement& a, const sbp::Placement& b) const {
  const int64_t period = cost_model_.TranslationPeriod();
  if (period <= 0) return 0;
  int64_t lowest = a.device_ids()[0];
  for (const sbp::Placement* p : {&a, &b}) {
    for (int64_t id : p->device_ids()) lowest = std::min(lowest, id);
  }
  return lowest / period * period;
}

}  // namespace twinflow::compiler
