#pragma once
// Helpers shared by the op case files (*_cases.cc): random small shapes, and fillers for ids,
// labels and inputs with a restricted domain.
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "engine/core/rng.h"
#include "engine/core/tensor.h"
#include "engine/graph/logical_graph.h"

namespace twinflow::testing {

// `rank` extents in 1..max_extent (default 7, so that splits over 2 to 6 devices are often
// uneven).
inline std::vector<int64_t> RandomExtents(Rng& rng, int rank, int64_t max_extent = 7) {
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) dims.push_back(rng.UniformInt(1, max_extent));
  return dims;
}

// Random extents of a rank drawn from [min_rank, max_rank] (the rank is drawn first).
inline std::vector<int64_t> RandomDims(Rng& rng, int min_rank, int max_rank,
                                       int64_t max_extent = 7) {
  const int rank = static_cast<int>(rng.UniformInt(min_rank, max_rank));
  return RandomExtents(rng, rank, max_extent);
}

inline Shape RandomShape(Rng& rng, int rank) { return Shape(RandomExtents(rng, rank)); }

inline graph::TensorMeta F32(Shape shape) {
  return graph::TensorMeta{std::move(shape), DType::kF32};
}
inline graph::TensorMeta F32(std::vector<int64_t> dims) { return F32(Shape(std::move(dims))); }

inline DType RandomIndexType(Rng& rng) { return rng.UniformInt(0, 1) ? DType::kI64 : DType::kI32; }

// Indices uniform in [0, limit).
inline std::function<Tensor(Rng&)> IndexFill(Shape shape, DType dtype, int64_t limit) {
  return [shape, dtype, limit](Rng& rng) {
    Tensor t(shape, dtype);
    for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, rng.UniformInt(0, limit - 1));
    return t;
  };
}

// Floats uniform in [lo, hi).
inline std::function<Tensor(Rng&)> UniformFill(Shape shape, double lo, double hi) {
  return [shape, lo, hi](Rng& rng) {
    Tensor t(shape, DType::kF32);
    for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, rng.Uniform(lo, hi));
    return t;
  };
}

// Floats from {-1, -0.5, 0, 0.5, 1}: ties are frequent (for max masks).
inline std::function<Tensor(Rng&)> CoarseFill(Shape shape) {
  return [shape](Rng& rng) {
    Tensor t(shape, DType::kF32);
    for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, 0.5 * rng.UniformInt(-2, 2));
    return t;
  };
}

// Distinct floats in [-1, 1) at spacing 2 / numel, in random order: no ties, and for up to
// ~50 elements a gap wider than a finite-difference step around every maximum.
inline std::function<Tensor(Rng&)> DistinctFill(Shape shape) {
  return [shape](Rng& rng) {
    Tensor t(shape, DType::kF32);
    const int64_t n = t.numel();
    std::vector<int64_t> order(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.UniformInt(0, i)]);
    for (int64_t i = 0; i < n; ++i) t.SetDouble(i, -1.0 + 2.0 * order[i] / n);
    return t;
  };
}

inline Shape WithLast(const Shape& shape, int64_t last) {
  std::vector<int64_t> dims = shape.dims();
  dims.push_back(last);
  return Shape(dims);
}

}  // namespace twinflow::testing
