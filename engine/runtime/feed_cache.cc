#include "engine/runtime/feed_cache.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "engine/core/error.h"

namespace twinflow::runtime {

FeedCache::FeedCache(std::vector<FeedSpec> specs, FeedMode mode, int rank,
                     const StepFeedFn& feed_fn, int64_t pieces_per_step, int64_t readers)
    : specs_(std::move(specs)),
      mode_(mode),
      rank_(rank),
      feed_fn_(feed_fn),
      pieces_per_step_(pieces_per_step),
      reads_per_step_(readers * pieces_per_step) {}

const FeedCache::Step& FeedCache::Fetch(int64_t step) {
  auto it = steps_.find(step);
  if (it != steps_.end()) return it->second;
  const std::string where = "feeds of step " + std::to_string(step) + ": ";
  if (!feed_fn_) throw InvalidArgumentError(where + "the plan has feeds but no feed function");
  Step s;
  try {
    s.values = feed_fn_(step);
  } catch (const Error& e) {
    RethrowPrefixed(e, where);
  } catch (const std::exception& e) {
    throw InvalidArgumentError(where + e.what());
  }
  CheckFeeds(specs_, s.values, mode_, rank_, where);
  s.reads_left = reads_per_step_;
  return steps_.emplace(step, std::move(s)).first->second;
}

void FeedCache::Read(int binding, int64_t piece, const Region& region, Tensor& out) {
  const int64_t step = piece / pieces_per_step_, m = piece % pieces_per_step_;
  const FeedSpec& spec = specs_.at(binding);
  const Tensor* value = nullptr;
  {
    // The FeedFn runs under the lock: sources of one step wait for its single call.
    std::lock_guard<std::mutex> lock(mutex_);
    value = &Fetch(step).values.at(spec.name);
  }
  // The step stays cached until this read is counted below, so `value` stays valid.
  if (region.rank() == 0 && pieces_per_step_ > 1) {
    const int64_t elem = DTypeSize(out.dtype());
    std::copy_n(value->raw() + m * elem, elem, out.raw());
  } else {
    // The value holds spec.rows of each piece, piece after piece.
    if (!spec.rows.Contains(region)) {
      throw PlanError("feed '" + spec.name + "': a source reads " + region.ToString() +
                      ", outside this rank's rows " + spec.rows.ToString());
    }
    Region src = region.RelativeTo(spec.rows);
    if (pieces_per_step_ > 1) {
      const int64_t rows = spec.rows.ranges[0].size();
      src.ranges[0].begin += m * rows;
      src.ranges[0].end += m * rows;
    }
    out.CopyRegionFrom(*value, src, Region::Full(out.shape()));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = steps_.find(step);
  if (it != steps_.end() && --it->second.reads_left <= 0) steps_.erase(it);
}

}  // namespace twinflow::runtime
