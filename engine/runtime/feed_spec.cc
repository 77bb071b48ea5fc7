#include "engine/runtime/feed_spec.h"

#include <algorithm>
#include <set>

#include "engine/core/error.h"
#include "engine/runtime/plan_tensors.h"

namespace twinflow::runtime {
namespace {

int RankOfPart(const plan::Plan& plan, const plan::BindingPart& part, const std::string& what) {
  if (part.regst() < 0 || part.regst() >= plan.regsts_size()) {
    throw PlanError(what + ": regst " + std::to_string(part.regst()) + " is out of range");
  }
  const int64_t producer = plan.regsts(static_cast<int>(part.regst())).producer();
  if (producer < 0 || producer >= plan.tasks_size()) {
    throw PlanError(what + ": regst " + std::to_string(part.regst()) + " has no producer");
  }
  const int device = plan.tasks(static_cast<int>(producer)).device();
  if (device < 0 || device >= plan.devices_size()) {
    throw PlanError(what + ": device " + std::to_string(device) + " is out of range");
  }
  return plan.devices(device).rank();
}

// True when the union of `regions` (distinct, non-empty) is exactly their bounding box, which it
// sets. Exact for any overlap: every cell of the grid their edges cut the box into must lie in
// one of them.
bool UnionIsBox(const std::vector<Region>& regions, Region& box) {
  box = regions.at(0);
  for (const Region& r : regions) {
    for (int a = 0; a < box.rank(); ++a) {
      box.ranges[a].begin = std::min(box.ranges[a].begin, r.ranges[a].begin);
      box.ranges[a].end = std::max(box.ranges[a].end, r.ranges[a].end);
    }
  }
  std::vector<std::vector<int64_t>> edges(box.rank());
  for (int a = 0; a < box.rank(); ++a) {
    std::set<int64_t> cuts;
    for (const Region& r : regions) cuts.insert({r.ranges[a].begin, r.ranges[a].end});
    edges[a].assign(cuts.begin(), cuts.end());
  }
  std::vector<size_t> at(box.rank(), 0);  // the cell: index into each axis's edges
  while (true) {
    Region cell;
    for (int a = 0; a < box.rank(); ++a)
      cell.ranges.push_back({edges[a][at[a]], edges[a][at[a] + 1]});
    const bool covered = std::any_of(regions.begin(), regions.end(),
                                     [&](const Region& r) { return r.Contains(cell); });
    if (!covered) return false;
    int a = box.rank() - 1;
    while (a >= 0 && ++at[a] + 1 >= edges[a].size()) at[a--] = 0;
    if (a < 0) return true;
  }
}

// The rows this rank feeds under kLocal: the bounding block of its parts' regions, which must
// be whole rows of axis 0 and covered without gaps.
Region LocalBlock(const plan::Binding& b, const Shape& logical, const std::vector<Region>& mine,
                  int rank) {
  const Region full = Region::Full(logical);
  if (std::find(mine.begin(), mine.end(), full) != mine.end()) return full;
  Region box;
  bool rows = UnionIsBox(mine, box);
  for (int a = 1; a < box.rank(); ++a) rows &= box.ranges[a] == full.ranges[a];
  if (rows) return box;
  std::string held;
  for (const Region& r : mine) held += " " + r.ToString();
  throw InvalidArgumentError(
      "feed=local: feed '" + b.name() + "' (layout " + b.layout() + ", " + logical.ToString() +
      "): the parts on rank " + std::to_string(rank) + "'s devices," + held +
      ", are not one block of whole rows of the batch axis, so there is no local batch to "
      "pass; feed it with feed=global");
}

FeedSpec SpecOf(const plan::Plan& plan, const plan::Binding& b, int rank, FeedMode mode) {
  const std::string what = "feed '" + b.name() + "'";
  FeedSpec spec;
  spec.name = b.name();
  spec.logical = ToShape(b.logical(), what);
  spec.dtype = ToDType(b.logical().dtype(), what);
  spec.pieces = std::max<int64_t>(1, plan.pieces_per_step());
  spec.rows = Region::Full(spec.logical);
  std::vector<Region> mine;
  for (const plan::BindingPart& part : b.parts()) {
    if (RankOfPart(plan, part, what) != rank) continue;
    const Region region = ToRegion(part.region(), what);
    if (region.rank() != spec.logical.rank() || !spec.rows.Contains(region)) {
      throw PlanError(what + ": part region " + region.ToString() + " does not fit " +
                      spec.logical.ToString());
    }
    if (!region.empty() && std::find(mine.begin(), mine.end(), region) == mine.end()) {
      mine.push_back(region);
    }
  }
  spec.read = !mine.empty();
  if (mode == FeedMode::kLocal && spec.read && spec.logical.rank() > 0) {
    spec.rows = LocalBlock(b, spec.logical, mine, rank);
  }
  spec.shape = StepShape(spec.rows.shape(), spec.pieces);
  return spec;
}

// "feed=local expects f32[4,12] on rank 1 (rows 4:8 of each micro-batch of 8)"
std::string Expected(const FeedSpec& spec, FeedMode mode, int rank) {
  std::string text = std::string("feed=") + FeedModeName(mode) + " expects " +
                     DTypeName(spec.dtype) + spec.shape.ToString() + " on rank " +
                     std::to_string(rank);
  if (spec.rows == Region::Full(spec.logical)) return text + " (the whole batch)";
  const Range rows = spec.rows.ranges[0];
  return text + " (rows " + std::to_string(rows.begin) + ":" + std::to_string(rows.end) + " of " +
         (spec.pieces > 1 ? "each micro-batch of " : "the batch of ") +
         std::to_string(spec.logical.dims()[0]) + ")";
}

}  // namespace

const char* FeedModeName(FeedMode mode) { return mode == FeedMode::kLocal ? "local" : "global"; }

FeedMode ParseFeedMode(const std::string& text, const std::string& what) {
  if (text == "local") return FeedMode::kLocal;
  if (text == "global") return FeedMode::kGlobal;
  throw InvalidArgumentError(what + ": the feed mode is local or global, not '" + text + "'");
}

Shape StepShape(const Shape& rows, int64_t pieces) {
  if (pieces == 1) return rows;
  if (rows.rank() == 0) return Shape{pieces};
  std::vector<int64_t> dims = rows.dims();
  dims[0] *= pieces;
  return Shape(std::move(dims));
}

std::vector<FeedSpec> FeedSpecs(const plan::Plan& plan, int rank, FeedMode mode) {
  std::vector<FeedSpec> specs;
  for (const plan::Binding& b : plan.feeds()) specs.push_back(SpecOf(plan, b, rank, mode));
  return specs;
}

void CheckFeeds(const std::vector<FeedSpec>& specs, const std::map<std::string, Tensor>& values,
                FeedMode mode, int rank, const std::string& where) {
  for (const FeedSpec& spec : specs) {
    const auto value = values.find(spec.name);
    if (value == values.end()) {
      if (!spec.read) continue;  // no device here reads it
      throw InvalidArgumentError(where + "no value for feed '" + spec.name + "' (" +
                                 Expected(spec, mode, rank) + ")");
    }
    if (value->second.shape() != spec.shape || value->second.dtype() != spec.dtype) {
      throw ShapeError(where + "feed '" + spec.name + "' is " + DTypeName(value->second.dtype()) +
                       value->second.shape().ToString() + ", " + Expected(spec, mode, rank));
    }
  }
}

Tensor LocalRows(const Tensor& global, const FeedSpec& spec) {
  const Shape whole = StepShape(spec.logical, spec.pieces);
  if (global.shape() != whole || global.dtype() != spec.dtype) {
    throw ShapeError("'" + spec.name + "' is " + DTypeName(global.dtype()) +
                     global.shape().ToString() + ", the whole batch is " + DTypeName(spec.dtype) +
                     whole.ToString());
  }
  if (spec.shape == whole) return global;
  Tensor out(spec.shape, spec.dtype);
  const int64_t rows = spec.rows.ranges[0].size(), batch = spec.logical.dims()[0];
  for (int64_t m = 0; m < spec.pieces; ++m) {
    Region src = spec.rows, dst = Region::Full(spec.shape);
    src.ranges[0].begin += m * batch;
    src.ranges[0].end += m * batch;
    dst.ranges[0] = {m * rows, (m + 1) * rows};
    out.CopyRegionFrom(global, src, dst);
  }
  return out;
}

}  // namespace twinflow::runtime
