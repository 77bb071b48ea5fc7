#pragma once
// FeedCache: the feeds of the steps in flight. The first source to reach a step asks the
// user's FeedFn for it (once per step, in step order), checks every value against this rank's
// FeedSpec (feed_spec.h: the whole batch, or under feed=local only this rank's rows), and keeps
// the values until every source has read its part of every piece of the step.
//
// Micro-batches: a feed binding's logical tensor is one piece's. With k pieces per step the
// FeedFn gives, per binding, a tensor whose axis 0 is k times longer (rank 0: a vector of k),
// and piece m of the step reads the m-th block of rows.
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/region.h"
#include "engine/core/tensor.h"
#include "engine/runtime/feed_spec.h"

namespace twinflow::runtime {

using StepFeedFn = std::function<std::map<std::string, Tensor>(int64_t step)>;

class FeedCache {
 public:
  // `specs`: this rank's, one per plan feed binding (FeedSpecs). `readers`: how many sources
  // read each piece. Keeps `feed_fn` by reference: it must outlive the cache (one Run).
  FeedCache(std::vector<FeedSpec> specs, FeedMode mode, int rank, const StepFeedFn& feed_fn,
            int64_t pieces_per_step, int64_t readers);

  // Copies `region` (of one piece's logical tensor, within this rank's rows) of feed `binding`
  // for `piece` into `out`, fetching the step first when it is new. InvalidArgumentError or
  // ShapeError naming the feed when the FeedFn's value is missing or does not fit.
  void Read(int binding, int64_t piece, const Region& region, Tensor& out);

 private:
  struct Step {
    std::map<std::string, Tensor> values;
    int64_t reads_left = 0;
  };
  const Step& Fetch(int64_t step);  // with mutex_ held

  const std::vector<FeedSpec> specs_;
  const FeedMode mode_;
  const int rank_;
  const StepFeedFn& feed_fn_;
  int64_t pieces_per_step_;
  int64_t reads_per_step_;
  std::mutex mutex_;
  std::map<int64_t, Step> steps_;
};

}  // namespace twinflow::runtime
