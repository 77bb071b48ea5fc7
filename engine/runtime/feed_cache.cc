#include "engine/runtime/feed_cache.h"

#include <algorithm>
#include <exception>

#include "engine/core/error.h"
#include "engine/runtime/plan_tensors.h"

namespace twinflow::runtime {

FeedCache::FeedCache(const plan::Plan& plan, const StepFeedFn& feed_fn, int64_t pieces_per_step,
                     int64_t readers)
    : plan_(plan),
      feed_fn_(feed_fn),
      pieces_per_step_(pieces_per_step),
      reads_per_step_(readers * pieces_per_step) {}

Shape FeedCache::StepShape(const Shape& logical, int64_t pieces_per_step) {
  if (pieces_per_step == 1) return logical;
  if (logical.rank() == 0) return Shape{pieces_per_step};
  std::vector<int64_t> dims = logical.dims();
  dims[0] *= pieces_per_step;
  return Shape(std::move(dims));
}

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
  for (const plan::Binding& b : plan_.feeds()) {
    const auto value = s.values.find(b.name());
    if (value == s.values.end())
      throw InvalidArgumentError(where + "no value for '" + b.name() + "'");
    const Shape expected =
        StepShape(ToShape(b.logical(), "feed '" + b.name() + "'"), pieces_per_step_);
    const DType dtype = ToDType(b.logical().dtype(), "feed '" + b.name() + "'");
    if (value->second.shape() != expected || value->second.dtype() != dtype) {
      throw ShapeError(where + "'" + b.name() + "' is " + DTypeName(value->second.dtype()) +
                       value->second.shape().ToString() + ", the plan expects " + DTypeName(dtype) +
                       expected.ToString());
    }
  }
  s.reads_left = reads_per_step_;
  return steps_.emplace(step, std::move(s)).first->second;
}

void FeedCache::Read(int binding, int64_t piece, const Region& region, Tensor& out) {
  const int64_t step = piece / pieces_per_step_, m = piece % pieces_per_step_;
  const plan::Binding& b = plan_.feeds(binding);
  const Tensor* value = nullptr;
  {
    // The FeedFn runs under the lock: sources of one step wait for its single call.
    std::lock_guard<std::mutex> lock(mutex_);
    value = &Fetch(step).values.at(b.name());
  }
  // The step stays cached until this read is counted below, so `value` stays valid.
  if (region.rank() == 0 && pieces_per_step_ > 1) {
    const int64_t elem = DTypeSize(out.dtype());
    std::copy_n(value->raw() + m * elem, elem, out.raw());
  } else {
    Region src = region;
    if (pieces_per_step_ > 1) {
      const int64_t rows = b.logical().shape(0);
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
