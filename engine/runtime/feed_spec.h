#pragma once
// What one rank passes for each feed binding of a Plan, by feed mode.
//
//   FeedMode::kLocal   (the default, as PyTorch's DistributedSampler) each rank passes only the
//                      rows its devices hold: the union of the regions of the binding's parts on
//                      this rank's devices, which must be one block of whole rows of axis 0 (the
//                      batch axis). A feed whose parts on this rank cover the whole tensor (a
//                      layout broadcast across ranks, or a one-rank run) is passed whole.
//   FeedMode::kGlobal  each rank passes the whole batch; the rows other ranks hold are not read.
//
// With k micro-batches per step, a step's value stacks k blocks on axis 0 (as a global feed
// does): block m is this rank's rows of micro-batch m.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/region.h"
#include "engine/core/shape.h"
#include "engine/core/tensor.h"
#include "engine/plan/plan.pb.h"

namespace twinflow::runtime {

enum class FeedMode : uint8_t { kLocal, kGlobal };

const char* FeedModeName(FeedMode mode);  // "local", "global"
// "local" or "global"; InvalidArgumentError naming `what` (e.g. "--feed") otherwise.
FeedMode ParseFeedMode(const std::string& text, const std::string& what);

struct FeedSpec {
  std::string name;
  Shape shape;  // the step's value this rank passes (micro-batches stacked on axis 0)
  DType dtype = DType::kF32;
  Shape logical;       // one micro-batch's logical (global) tensor
  Region rows;         // the region of `logical` the value holds, per micro-batch: Full when whole
  int64_t pieces = 1;  // micro-batches per step
  bool read = true;    // false: no device of this rank holds a part; the value may be omitted
};

// A step's value for a feed whose micro-batch is `rows`: `pieces` of them stacked on axis 0
// (a scalar feed becomes a vector of `pieces`).
Shape StepShape(const Shape& rows, int64_t pieces);

// One spec per plan.feeds(), in order. InvalidArgumentError naming the feed and its layout when
// the mode is kLocal and this rank's parts do not make one block of whole rows; PlanError for a
// malformed binding.
std::vector<FeedSpec> FeedSpecs(const plan::Plan& plan, int rank, FeedMode mode);

// Checks one step's values against the specs: every feed read here present, and every value
// given with the spec's shape and dtype, else ShapeError (InvalidArgumentError for a missing
// one) naming the feed, the shape given, the shape expected and the mode. `where` prefixes it.
void CheckFeeds(const std::vector<FeedSpec>& specs, const std::map<std::string, Tensor>& values,
                FeedMode mode, int rank, const std::string& where);

// The rows of a whole step's value (`global`, the global batch) that `spec` says this rank
// passes: what a data source that has the whole batch feeds under kLocal.
Tensor LocalRows(const Tensor& global, const FeedSpec& spec);

}  // namespace twinflow::runtime
