// Properties of the boxing planner and executor over random dtypes, shapes (sizes not
// divisible by, and smaller than, the device count, and empty ones), placements (1-D, 2-D and
// 3-D meshes, different device counts, disjoint, overlapping and shuffled device lists, cpu
// and cuda) and NdSbp pairs. Each property runs 1,000 cases by default (tests/property/main.cc).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/sbp/alpha_beta_cost_model.h"
#include "engine/sbp/boxing_executor.h"
#include "engine/sbp/boxing_planner.h"
#include "engine/sbp/boxing_steps.h"
#include "engine/sbp/distribute.h"
#include "engine/sbp/slicing.h"

namespace twinflow::sbp {
namespace {

const std::vector<std::vector<int64_t>> kMeshes = {
    {1},    {2},    {3},    {4},    {5},    {8},       {1, 3},    {2, 1},
    {2, 2}, {2, 3}, {3, 2}, {2, 4}, {4, 2}, {2, 2, 2}, {1, 2, 2}, {2, 1, 3}};

Shape DrawShape() {
  const int rank = *rc::gen::inRange(1, 4);
  std::vector<int64_t> dims;
  for (int k = 0; k < rank; ++k) {
    // Mostly small extents (smaller than or not divisible by the device count), sometimes 0.
    dims.push_back(*rc::gen::weightedOneOf<int64_t>(
        {{12, rc::gen::inRange<int64_t>(1, 10)}, {1, rc::gen::just<int64_t>(0)}}));
  }
  return Shape(dims);
}

// A placement whose devices are drawn from 16 ids; `avoid` lists ids it must not use
// (for disjoint pairs).
Placement DrawPlacement(const std::vector<int64_t>& avoid = {}) {
  const std::vector<int64_t> mesh = *rc::gen::elementOf(kMeshes);
  int64_t count = 1;
  for (int64_t m : mesh) count *= m;
  std::vector<int64_t> free_ids;
  for (int64_t id = 0; id < 16; ++id) {
    if (std::find(avoid.begin(), avoid.end(), id) == avoid.end()) free_ids.push_back(id);
  }
  RC_PRE(static_cast<int64_t>(free_ids.size()) >= count);
  // Contiguous runs are the common case; shuffled lists check that order is respected.
  const auto start = *rc::gen::inRange<int64_t>(0, free_ids.size() - count + 1);
  std::vector<int64_t> ids(free_ids.begin() + start, free_ids.begin() + start + count);
  if (*rc::gen::inRange(0, 4) == 0) {
    Rng shuffle(*rc::gen::inRange<uint64_t>(0, 1000));
    for (int64_t i = count - 1; i > 0; --i) std::swap(ids[i], ids[shuffle.UniformInt(0, i)]);
  }
  const DeviceType type = *rc::gen::inRange(0, 8) == 0 ? DeviceType::kCuda : DeviceType::kCpu;
  return Placement(type, ids, Shape(mesh));
}

NdSbp DrawNdSbp(int tensor_rank, int mesh_rank) {
  std::vector<Sbp> sbps;
  for (int a = 0; a < mesh_rank; ++a) {
    const int choice = *rc::gen::inRange(0, tensor_rank + 4);
    if (choice < tensor_rank) {
      sbps.push_back(Sbp::Split(choice));
    } else if (choice == tensor_rank) {
      sbps.push_back(Sbp::Broadcast());
    } else {
      sbps.push_back(Sbp::Partial(static_cast<ReduceOp>(choice - tensor_rank - 1)));
    }
  }
  return NdSbp(sbps);
}

Layout DrawLayout(const Shape& shape, const Placement& placement) {
  return Layout{placement, DrawNdSbp(shape.rank(), placement.hierarchy().rank())};
}

// The destination placement: the same, a disjoint one, or any (often overlapping) one.
Placement DrawOtherPlacement(const Placement& src) {
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      return src;
    case 1:
      return DrawPlacement(src.device_ids());
    default:
      return DrawPlacement();
  }
}

AlphaBetaCostModel DrawCostModel() {
  AlphaBetaConfig config;
  config.devices_per_node = *rc::gen::elementOf(std::vector<int64_t>{1, 2, 4, 8});
  return AlphaBetaCostModel(config);
}

bool HasEffectivePartialSum(const Layout& layout) {
  for (int a = 0; a < layout.nd_sbp.size(); ++a) {
    const Sbp& s = layout.nd_sbp[a];
    if (s.is_partial() && s.op == ReduceOp::kSum && layout.placement.hierarchy()[a] > 1) {
      return true;
    }
  }
  return false;
}

bool HasEffectivePartial(const Layout& layout) {
  for (int a = 0; a < layout.nd_sbp.size(); ++a) {
    if (layout.nd_sbp[a].is_partial() && layout.placement.hierarchy()[a] > 1) return true;
  }
  return false;
}

// Independent of the planner: can every destination device build its slice from what it
// already holds? (Destination non-partial.)
bool DataIsAlreadyLocal(const Shape& shape, const Layout& src, const Layout& dst) {
  for (int64_t j = 0; j < dst.placement.size(); ++j) {
    const Region need = PhysicalRegion(shape, dst, j);
    if (need.empty()) continue;
    const auto s = src.placement.ParallelIndexOf(dst.placement.device(j));
    if (!s || HasEffectivePartial(src) || !PhysicalRegion(shape, src, *s).Contains(need)) {
      return false;
    }
  }
  return true;
}

// Values: integers for integer dtypes and for 16-bit floats (which then sum exactly), uniform
// reals in [-1, 1) for f32 and f64.
Tensor DrawTensor(const Shape& shape, DType dtype, Rng& rng) {
  if (!IsStorageOnly(dtype)) return Tensor::Random(shape, dtype, rng);
  Tensor t(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, rng.UniformInt(-16, 16));
  return t;
}

RC_GTEST_PROP(BoxingProperty, ExecutedPlanReassemblesTheLogicalTensor, ()) {
  const DType dtype =
      *rc::gen::elementOf(std::vector<DType>(std::begin(kAllDTypes), std::end(kAllDTypes)));
  const Shape shape = DrawShape();
  const Layout src = DrawLayout(shape, DrawPlacement());
  const Layout dst = DrawLayout(shape, DrawOtherPlacement(src.placement));
  const AlphaBetaCostModel cost = DrawCostModel();
  Rng rng(*rc::gen::inRange<uint64_t>(0, 1u << 30));

  const Tensor x = DrawTensor(shape, dtype, rng);
  const BoxingPlan plan = PlanBoxing(shape, dtype, src, dst, cost);
  const BoxingResult result = ExecuteBoxing(plan, Distribute(x, src, rng));
  const Tensor y = Assemble(result.outputs, shape, dst);
  RC_LOG() << DTypeName(dtype) << shape.ToString() << "\n"
           << plan.ToString() << "\nx = " << x.ToString() << "\ny = " << y.ToString() << "\n";
  if (dtype == DType::kF32 || dtype == DType::kF64) {
    if (HasEffectivePartialSum(src)) {
      // Float partial sums are exact only up to rounding: parts scale like (|v| + 1) and at
      // most 8 of them add up, so a few ulps of 2 per device bound the error.
      const double eps = dtype == DType::kF32 ? 1.2e-7 : 2.3e-16;
      const double tol = eps * 2 * 8 * static_cast<double>(src.placement.size());
      RC_ASSERT(CloseRatio(y, x, tol, tol) <= 1.0);
      return;
    }
  }
  // Integers, 16-bit floats holding integers, and every float transition without a source
  // partial sum: copies, max and min are exact.
  RC_ASSERT(BitEqual(y, x));
}

RC_GTEST_PROP(BoxingProperty, CostIsNonNegativeAndZeroExactlyWhenNoByteMoves, ()) {
  const Shape shape = DrawShape();
  const Layout src = DrawLayout(shape, DrawPlacement());
  const Layout dst = DrawLayout(shape, DrawOtherPlacement(src.placement));
  const AlphaBetaCostModel cost = DrawCostModel();
  const BoxingPlan plan = PlanBoxing(shape, DType::kI32, src, dst, cost);
  RC_ASSERT(plan.time() >= 0.0);
  for (const BoxingStep& step : plan.steps) RC_ASSERT(step.time >= 0.0);
  RC_ASSERT((plan.time() == 0.0) == (plan.cross_device_bytes() == 0));
  // The executor's own count of bytes that crossed devices agrees on zero.
  Rng rng(1);
  const BoxingResult result =
      ExecuteBoxing(plan, Distribute(Tensor::Random(shape, DType::kI32, rng), src, rng));
  RC_ASSERT((result.cross_device_bytes == 0) == (plan.cross_device_bytes() == 0));
  // And an oracle that knows nothing of the planner: when every device already holds what it
  // needs, the plan is free; when a non-partial destination needs a byte from elsewhere, not.
  const bool local = DataIsAlreadyLocal(shape, src, dst);
  if (local) RC_ASSERT(plan.time() == 0.0);
  if (!HasEffectivePartial(dst)) RC_ASSERT(local == (plan.time() == 0.0));
}

RC_GTEST_PROP(BoxingProperty, CostObeysTheTriangleInequality, ()) {
  const Shape shape = DrawShape();
  const DType dtype = *rc::gen::elementOf(std::vector<DType>{DType::kF32, DType::kBF16});
  const Layout a = DrawLayout(shape, DrawPlacement());
  const Layout c = DrawLayout(shape, DrawOtherPlacement(a.placement));
  // b lies on one of the two placements: the planner searches every layout on those.
  const Layout b = DrawLayout(shape, *rc::gen::inRange(0, 2) ? a.placement : c.placement);
  const AlphaBetaCostModel cost = DrawCostModel();
  const double direct = PlanBoxing(shape, dtype, a, c, cost).time();
  const double via =
      PlanBoxing(shape, dtype, a, b, cost).time() + PlanBoxing(shape, dtype, b, c, cost).time();
  RC_ASSERT(direct <= via * (1 + 1e-9));
}

RC_GTEST_PROP(BoxingProperty, PlanningIsDeterministic, ()) {
  const Shape shape = DrawShape();
  const Layout src = DrawLayout(shape, DrawPlacement());
  const Layout dst = DrawLayout(shape, DrawOtherPlacement(src.placement));
  const AlphaBetaCostModel cost = DrawCostModel();
  const BoxingPlan first = PlanBoxing(shape, DType::kF32, src, dst, cost);
  const BoxingPlan second = PlanBoxing(shape, DType::kF32, src, dst, cost);
  RC_ASSERT(first.ToString() == second.ToString());
  RC_ASSERT(first.steps.size() == second.steps.size());
  for (size_t i = 0; i < first.steps.size(); ++i) {
    RC_ASSERT(first.steps[i].kind == second.steps[i].kind);
    RC_ASSERT(first.steps[i].to == second.steps[i].to);
    RC_ASSERT(first.steps[i].time == second.steps[i].time);
  }
}

}  // namespace
}  // namespace twinflow::sbp

namespace twinflow::sbp {
namespace {

// The all-targets search the SBP search prices with agrees with planning each target alone.
RC_GTEST_PROP(BoxingProperty, TimesFromOneSourceMatchSinglePlans, ()) {
  const Shape shape = DrawShape();
  const Layout src = DrawLayout(shape, DrawPlacement());
  const Layout dst = DrawLayout(shape, DrawOtherPlacement(src.placement));
  const AlphaBetaCostModel cost = DrawCostModel();
  const auto times = BoxingTimesFrom(shape, DType::kF32, src, dst.placement, cost);
  const double single = PlanBoxing(shape, DType::kF32, src, dst, cost).time();
  RC_ASSERT(times.count(dst.nd_sbp) == 1u);
  RC_ASSERT(std::fabs(times.at(dst.nd_sbp) - single) <= 1e-9 * (1 + single));
}

// A random shape, two layouts of it that are not partial (the second on the same placement, a
// disjoint or an overlapping one) and a cost model.
struct SendRecvCase {
  Shape shape;
  Layout src, dst;
  AlphaBetaCostModel cost;
};
SendRecvCase DrawSendRecvCase() {
  const Shape shape = DrawShape();
  const Layout src = DrawLayout(shape, DrawPlacement());
  const Layout dst = DrawLayout(shape, DrawOtherPlacement(src.placement));
  RC_PRE(!HasEffectivePartial(src) && !HasEffectivePartial(dst));
  return {shape, src, dst, DrawCostModel()};
}

// A send-recv from `src` to `dst` walked with its transfers, and what it was priced from.
// `shape` and `cost` must outlive it.
struct WalkedSendRecv {
  WalkedSendRecv(const Shape& shape, const Layout& src, const Layout& dst,
                 const AlphaBetaCostModel& cost, DType dtype = DType::kF32)
      : ctx{shape, dtype, cost},
        from(ComputeFacts(shape, src)),
        to(ComputeFacts(shape, dst)),
        local(SourceIndexOfDestinations(src.placement, dst.placement)),
        step(SendRecvStep(ctx, from, to, local, /*with_transfers=*/true)) {}
  StepContext ctx;
  LayoutFacts from, to;
  std::vector<int64_t> local;
  std::optional<BoxingStep> step;
};

// The closed-form pricing of a send-recv step (send_recv_closed_form.h) agrees with walking
// its pieces: the same link bytes, and the same time up to rounding.
RC_GTEST_PROP(BoxingProperty, SendRecvPricedInClosedFormMatchesTheWalk, ()) {
  const SendRecvCase c = DrawSendRecvCase();
  const DType dtype = *rc::gen::elementOf(std::vector<DType>{DType::kF32, DType::kBF16});
  const WalkedSendRecv walk(c.shape, c.src, c.dst, c.cost, dtype);
  const auto priced = SendRecvStep(walk.ctx, walk.from, walk.to, walk.local, false);
  const std::optional<BoxingStep>& walked = walk.step;
  RC_ASSERT(priced.has_value() == walked.has_value());
  if (!priced) return;
  RC_LOG() << c.src.ToString() << " -> " << c.dst.ToString() << " " << c.shape.ToString() << ": "
           << priced->time << " vs " << walked->time << "\n";
  RC_ASSERT(std::fabs(priced->time - walked->time) <= 1e-12 + 1e-9 * walked->time);
  RC_ASSERT(priced->link_bytes == walked->link_bytes);
}

// Send-recv's lower bound (the search skips steps above their budget by it) never exceeds the
// step's time.
RC_GTEST_PROP(BoxingProperty, SendRecvLowerBoundHolds, ()) {
  const SendRecvCase c = DrawSendRecvCase();
  const WalkedSendRecv walked(c.shape, c.src, c.dst, c.cost);
  const auto& [ctx, from, to, local, step] = walked;
  if (!step) return;
  const double bound = SendRecvLowerBound(ctx, from, to, local);
  RC_LOG() << c.src.ToString() << " -> " << c.dst.ToString() << ": " << bound << " vs "
           << step->time;
  RC_ASSERT(bound <= step->time * (1 + 1e-12) + 1e-15);
}

// Each piece a send-recv copies comes from the destination itself when it holds it, else from
// the first of the holders' window (up to 16, from the first at or after the destination's
// index plus the piece's number, cyclically) whose message is fastest. Sources of up to 72
// devices replicated over up to 24, so that windows wrap and miss the destination's node; ids
// ascending or shuffled.
RC_GTEST_PROP(BoxingProperty, SendRecvTakesTheFastestHolderOfItsWindow, ()) {
  const auto a = *rc::gen::inRange<int64_t>(1, 25), b = *rc::gen::inRange<int64_t>(1, 4);
  std::vector<int64_t> ids(a * b);
  const auto first = *rc::gen::inRange<int64_t>(0, 20);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = first + static_cast<int64_t>(i);
  if (*rc::gen::inRange(0, 4) == 0) {
    Rng shuffle(*rc::gen::inRange<uint64_t>(0, 1000));
    for (int64_t i = a * b - 1; i > 0; --i) std::swap(ids[i], ids[shuffle.UniformInt(0, i)]);
  }
  const Shape shape({*rc::gen::inRange<int64_t>(1, 64), *rc::gen::inRange<int64_t>(1, 64)});
  // Replicated over the first axis: up to 24 holders a cell.
  NdSbp replicated = DrawNdSbp(shape.rank(), 2);
  replicated[0] = Sbp::Broadcast();
  const Layout src{Placement(DeviceType::kCpu, ids, Shape({a, b})), replicated};
  const Layout dst = DrawLayout(shape, DrawOtherPlacement(src.placement));
  RC_PRE(!HasEffectivePartial(src) && !HasEffectivePartial(dst));
  const AlphaBetaCostModel cost = DrawCostModel();
  const WalkedSendRecv walked(shape, src, dst, cost);
  const auto& [ctx, from, to, local, step] = walked;
  if (!step) return;
  std::vector<int64_t> pieces(dst.placement.size(), 0);
  for (const RegionTransfer& t : step->transfers) {
    std::vector<int64_t> holders;
    for (int64_t s = 0; s < src.placement.size(); ++s) {
      if (from.regions[s].IntersectNumel(t.region) == t.region.numel()) holders.push_back(s);
    }
    const int64_t j = t.dst_index, number = pieces[j]++;
    if (std::count(holders.begin(), holders.end(), local[j]) > 0) {
      RC_ASSERT(t.src_index == local[j]);
      continue;
    }
    const auto n = static_cast<int64_t>(holders.size());
    const int64_t want = (j + number) % src.placement.size();
    const int64_t start =
        (std::lower_bound(holders.begin(), holders.end(), want) - holders.begin()) % n;
    int64_t chosen = -1;
    double fastest = 0;
    for (int64_t w = 0; w < std::min<int64_t>(n, 16); ++w) {
      const int64_t h = holders[(start + w) % n];
      const double time =
          cost.MessageTime(src.placement.device(h), dst.placement.device(j), t.bytes);
      if (chosen < 0 || time < fastest) {
        chosen = h;
        fastest = time;
      }
    }
    RC_ASSERT(t.src_index == chosen);
  }
}

// All-to-all steps are priced in O(group) (the largest block factored, link bytes counted by
// node, boxing_steps.cc and alpha_beta_cost_model.cc); pricing every pair of members agrees.
RC_GTEST_PROP(BoxingProperty, AllToAllPricedInLinearTimeMatchesEveryPair, ()) {
  std::vector<int64_t> dims = {*rc::gen::inRange<int64_t>(0, 10),
                               *rc::gen::inRange<int64_t>(0, 10)};
  if (*rc::gen::inRange(0, 2)) dims.push_back(*rc::gen::inRange<int64_t>(1, 5));
  const Shape shape(dims);
  const Placement placement = DrawPlacement();
  const Shape& mesh = placement.hierarchy();
  const int axis = *rc::gen::inRange(0, mesh.rank());
  RC_PRE(mesh[axis] > 1);
  const int gather = *rc::gen::inRange(0, shape.rank());
  const int scatter = (gather + *rc::gen::inRange(1, shape.rank())) % shape.rank();
  Layout src = DrawLayout(shape, placement);
  src.nd_sbp[axis] = Sbp::Split(gather);
  Layout dst = src;
  dst.nd_sbp[axis] = Sbp::Split(scatter);
  const AlphaBetaCostModel cost = DrawCostModel();
  const StepContext ctx{shape, DType::kF32, cost};
  const LayoutFacts from = ComputeFacts(shape, src), to = ComputeFacts(shape, dst);
  const auto step = AxisStep(ctx, from, to, axis);
  RC_PRE(step.has_value());
  RC_ASSERT(step->kind == BoxingStepKind::kAllToAll);

  double time = 0;
  LinkBytes link_bytes;
  for (const std::vector<int64_t>& group : step->groups) {
    const auto p = static_cast<int64_t>(group.size());
    int64_t largest = 0;
    std::vector<DeviceId> devices;
    for (int64_t m : group) {
      devices.push_back(placement.device(m));
      for (int64_t r : group) {
        if (r != m) largest = std::max(largest, from.regions[m].IntersectNumel(to.regions[r]));
      }
    }
    const int64_t bytes = largest * 4 * p;
    time = std::max(time, cost.CollectiveTime(CollectiveKind::kAllToAll, devices, bytes));
    const int64_t per_pair = (2 * bytes + p) / (2 * p);
    for (int64_t i = 0; i < p && per_pair > 0; ++i) {
      for (int64_t j = 0; j < p; ++j) {
        if (i != j) link_bytes[cost.Classify(devices[i], devices[j])] += per_pair;
      }
    }
  }
  RC_LOG() << src.ToString() << " -> " << dst.ToString() << " " << shape.ToString() << "\n";
  RC_ASSERT(step->time == time);
  RC_ASSERT(step->link_bytes == link_bytes);
}

}  // namespace
}  // namespace twinflow::sbp
