#include "engine/sbp/distribute.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "engine/core/error.h"
#include "engine/sbp/slicing.h"

namespace twinflow::sbp {
namespace {

// Integer parts of a sum stay small so that every partial sum of the parts fits the dtype.
constexpr int64_t kIntPartBound = 1000;
// Integers up to this magnitude, and sums of a few of them, are exact in bf16 (8-bit
// significand) and every wider float type.
constexpr double kExactGridBound = 64;

template <typename T>
void DecomposeInt(const T* value, std::vector<Tensor>& parts, ReduceOp op, int64_t n, Rng& rng) {
  const int64_t p = static_cast<int64_t>(parts.size());
  const int64_t lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = value[i];
    const int64_t holder = rng.UniformInt(0, p - 1);
    if (op == ReduceOp::kSum) {
      // Near the dtype's limits all parts take v's sign, so no running sum can overflow.
      const bool huge = v > hi / 4 || v < lo / 4;
      int64_t rest = v;
      for (int64_t m = 0; m < p; ++m) {
        if (m == holder) continue;
        int64_t part = rng.UniformInt(-kIntPartBound, kIntPartBound);
        if (huge) part = v > 0 ? std::abs(part) : -std::abs(part);
        parts[m].data<T>()[i] = static_cast<T>(part);
        rest -= part;
      }
      parts[holder].data<T>()[i] = static_cast<T>(rest);
      continue;
    }
    for (int64_t m = 0; m < p; ++m) {
      int64_t x = v;
      if (m != holder) {
        const int64_t delta = rng.UniformInt(1, kIntPartBound);
        if (op == ReduceOp::kMax) x = v >= lo + delta ? v - delta : lo;
        if (op == ReduceOp::kMin) x = v <= hi - delta ? v + delta : hi;
      }
      parts[m].data<T>()[i] = static_cast<T>(x);
    }
  }
}

// Floats (bf16/f16 included) are decomposed in double and stored rounded; a sum's holder takes
// the remainder of the stored parts, so only the final additions round.
void DecomposeFloat(const Tensor& value, std::vector<Tensor>& parts, ReduceOp op, Rng& rng) {
  const int64_t p = static_cast<int64_t>(parts.size());
  for (int64_t i = 0, end = value.numel(); i < end; ++i) {
    const double v = value.GetDouble(i);
    const int64_t holder = rng.UniformInt(0, p - 1);
    const double scale = std::fabs(v) + 1.0;
    if (!std::isfinite(v)) {
      for (int64_t m = 0; m < p; ++m) {
        parts[m].SetDouble(i, m == holder || op != ReduceOp::kSum ? v : 0.0);
      }
      continue;
    }
    if (op == ReduceOp::kSum) {
      // Small integer values get small integer parts: every partial sum is then exact even in
      // bf16, so tests can demand bit-exact results from integer-valued float tensors.
      const bool on_grid = v == std::nearbyint(v) && std::fabs(v) <= kExactGridBound;
      double rest = v;
      for (int64_t m = 0; m < p; ++m) {
        if (m == holder) continue;
        parts[m].SetDouble(i, on_grid ? static_cast<double>(rng.UniformInt(-4, 4))
                                      : rng.Uniform(-1.0, 1.0) * scale);
        rest -= parts[m].GetDouble(i);
      }
      parts[holder].SetDouble(i, rest);
      if (!std::isfinite(parts[holder].GetDouble(i))) {
        // Near the dtype's range limit: keep the value whole rather than overflow.
        for (int64_t m = 0; m < p; ++m) parts[m].SetDouble(i, m == holder ? v : 0.0);
      }
      continue;
    }
    for (int64_t m = 0; m < p; ++m) {
      // At least a tenth of the scale, which is far above the rounding of any storage type.
      const double delta = m == holder ? 0.0 : rng.Uniform(0.1, 1.0) * scale;
      parts[m].SetDouble(i, op == ReduceOp::kMax ? v - delta : v + delta);
    }
  }
}

std::vector<Tensor> Decompose(const Tensor& value, ReduceOp op, int64_t p, Rng& rng) {
  std::vector<Tensor> parts(p, Tensor(value.shape(), value.dtype()));
  switch (value.dtype()) {
    case DType::kI32:
      DecomposeInt(value.data<int32_t>(), parts, op, value.numel(), rng);
      break;
    case DType::kI64:
      DecomposeInt(value.data<int64_t>(), parts, op, value.numel(), rng);
      break;
    default:
      DecomposeFloat(value, parts, op, rng);
  }
  return parts;
}

// The physical tensors below one prefix of mesh coordinates, in row-major order of the rest.
void DistributeFrom(const Tensor& value, const Region& region, const Layout& layout, int axis,
                    Rng& rng, std::vector<Tensor>& out) {
  const Shape& hierarchy = layout.placement.hierarchy();
  if (axis == hierarchy.rank()) {
    out.push_back(value);
    return;
  }
  const int64_t p = hierarchy[axis];
  const Sbp& sbp = layout.nd_sbp[axis];
  if (sbp.is_broadcast()) {
    // Replicas hold the same physical tensors, partial decompositions below included.
    const size_t first = out.size();
    DistributeFrom(value, region, layout, axis + 1, rng, out);
    const size_t count = out.size() - first;
    for (int64_t c = 1; c < p; ++c) {
      for (size_t k = 0; k < count; ++k) out.push_back(out[first + k]);
    }
    return;
  }
  if (sbp.is_partial()) {
    for (const Tensor& part : Decompose(value, sbp.op, p, rng)) {
      DistributeFrom(part, region, layout, axis + 1, rng, out);
    }
    return;
  }
  for (int64_t c = 0; c < p; ++c) {
    Region child = region;
    child.ranges[sbp.axis] = BalancedPart(region.ranges[sbp.axis], p, c);
    DistributeFrom(value.Slice(child.RelativeTo(region)), child, layout, axis + 1, rng, out);
  }
}

class Assembler {
 public:
  Assembler(const std::vector<Tensor>& physical, const Layout& layout)
      : physical_(physical), layout_(layout), hierarchy_(layout.placement.hierarchy()) {}

  // The value held by the mesh-coordinate prefix whose row-major index is `prefix`.
  Tensor Combine(int axis, int64_t prefix, const Region& region) const {
    if (axis == hierarchy_.rank()) return physical_[prefix];
    const int64_t p = hierarchy_[axis];
    const Sbp& sbp = layout_.nd_sbp[axis];
    if (sbp.is_split()) {
      Tensor out(region.shape(), physical_[0].dtype());
      for (int64_t c = 0; c < p; ++c) {
        Region child = region;
        child.ranges[sbp.axis] = BalancedPart(region.ranges[sbp.axis], p, c);
        const Tensor part = Combine(axis + 1, prefix * p + c, child);
        out.CopyRegionFrom(part, Region::Full(part.shape()), child.RelativeTo(region));
      }
      return out;
    }
    Tensor out = Combine(axis + 1, prefix * p, region);
    for (int64_t c = 1; c < p; ++c) {
      const Tensor other = Combine(axis + 1, prefix * p + c, region);
      if (sbp.is_partial()) {
        out.ReduceFrom(other, sbp.op);
      } else if (!BitEqual(out, other)) {
        ThrowReplicaMismatch(axis, prefix * p, prefix * p + c);
      }
    }
    return out;
  }

 private:
  // Names the first pair of devices, one under each of the two prefixes, that differ.
  [[noreturn]] void ThrowReplicaMismatch(int axis, int64_t a, int64_t b) const {
    int64_t below = 1;
    for (int k = axis + 1; k < hierarchy_.rank(); ++k) below *= hierarchy_[k];
    int64_t da = a * below, db = b * below;
    for (int64_t k = 0; k < below; ++k) {
      if (!BitEqual(physical_[a * below + k], physical_[b * below + k])) {
        da = a * below + k;
        db = b * below + k;
        break;
      }
    }
    throw SbpError("broadcast replicas on " + layout_.placement.device(da).ToString() + " and " +
                   layout_.placement.device(db).ToString() + " differ (mesh axis " +
                   std::to_string(axis) + " of layout " + layout_.ToString() + ")");
  }

  const std::vector<Tensor>& physical_;
  const Layout& layout_;
  const Shape& hierarchy_;
};

}  // namespace

std::vector<Tensor> Distribute(const Tensor& logical, const Layout& layout, Rng& rng) {
  layout.Validate(logical.shape());
  std::vector<Tensor> out;
  out.reserve(layout.placement.size());
  DistributeFrom(logical, Region::Full(logical.shape()), layout, 0, rng, out);
  return out;
}

Tensor Assemble(const std::vector<Tensor>& physical, const Shape& logical_shape,
                const Layout& layout) {
  const std::vector<Region> regions = PhysicalRegions(logical_shape, layout);
  if (physical.size() != regions.size()) {
    throw ShapeError("layout " + layout.ToString() + " places tensor " + logical_shape.ToString() +
                     " on " + std::to_string(regions.size()) + " devices but " +
                     std::to_string(physical.size()) + " physical tensors were given");
  }
  for (size_t i = 0; i < physical.size(); ++i) {
    const std::string device = layout.placement.device(static_cast<int64_t>(i)).ToString();
    if (physical[i].dtype() != physical[0].dtype()) {
      throw ShapeError("physical tensor on " + device + " has dtype " +
                       DTypeName(physical[i].dtype()) + " but the one on " +
                       layout.placement.device(0).ToString() + " has " +
                       DTypeName(physical[0].dtype()));
    }
    if (physical[i].shape() != regions[i].shape()) {
      throw ShapeError("physical tensor on " + device + " has shape " +
                       physical[i].shape().ToString() + " but layout " + layout.ToString() +
                       " gives it " + regions[i].shape().ToString() + " of " +
                       logical_shape.ToString());
    }
  }
  return Assembler(physical, layout).Combine(0, 0, Region::Full(logical_shape));
}

}  // namespace twinflow::sbp
