#include "engine/core/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/core/error.h"

namespace twinflow {
namespace {

// Walks every row (last-dimension run) of a region, calling fn(offset_in_region_elements,
// offset_in_tensor_elements) for the row's first element.
template <typename Fn>
void ForEachRow(const Shape& tensor_shape, const Region& region, Fn fn) {
  const int rank = region.rank();
  if (region.empty()) return;
  if (rank == 0) {
    fn(int64_t{0}, int64_t{0});
    return;
  }
  const std::vector<int64_t> strides = tensor_shape.Strides();
  const int64_t row = region.ranges[rank - 1].size();
  std::vector<int64_t> index(rank, 0);
  int64_t region_offset = 0;
  while (true) {
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d) offset += (region.ranges[d].begin + index[d]) * strides[d];
    fn(region_offset, offset);
    region_offset += row;
    int d = rank - 2;
    for (; d >= 0; --d) {
      if (++index[d] < region.ranges[d].size()) break;
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// std::max and std::min, except that a NaN in `b` is kept too (std's drop it), so a
// partial-max reduction gives NaN whatever order the parts arrive in.
template <typename T>
T MaxKeepingNan(T a, T b) {
  return a < b || b != b ? b : a;
}
template <typename T>
T MinKeepingNan(T a, T b) {
  return b < a || b != b ? b : a;
}

template <typename T>
void ReduceTyped(T* dst, const T* src, int64_t n, ReduceOp op) {
  for (int64_t i = 0; i < n; ++i) {
    switch (op) {
      case ReduceOp::kSum:
        dst[i] = dst[i] + src[i];
        break;
      case ReduceOp::kMax:
        dst[i] = MaxKeepingNan(dst[i], src[i]);
        break;
      case ReduceOp::kMin:
        dst[i] = MinKeepingNan(dst[i], src[i]);
        break;
    }
  }
}

// dst[i] = op(dst[i], src[i]) for n elements of `dtype`; bf16/f16 through double, rounded once.
void ReduceWide(std::byte* dst, const std::byte* src, int64_t n, ReduceOp op, float (*in)(uint16_t),
                uint16_t (*out)(float)) {
  auto* d = reinterpret_cast<uint16_t*>(dst);
  const auto* s = reinterpret_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    const double a = in(d[i]), b = in(s[i]);
    d[i] = out(static_cast<float>(op == ReduceOp::kSum   ? a + b
                                  : op == ReduceOp::kMax ? MaxKeepingNan(a, b)
                                                         : MinKeepingNan(a, b)));
  }
}

void ReduceElements(std::byte* dst, const std::byte* src, int64_t n, DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::kF32:
      return ReduceTyped(reinterpret_cast<float*>(dst), reinterpret_cast<const float*>(src), n, op);
    case DType::kF64:
      return ReduceTyped(reinterpret_cast<double*>(dst), reinterpret_cast<const double*>(src), n,
                         op);
    case DType::kI32:
      return ReduceTyped(reinterpret_cast<int32_t*>(dst), reinterpret_cast<const int32_t*>(src), n,
                         op);
    case DType::kI64:
      return ReduceTyped(reinterpret_cast<int64_t*>(dst), reinterpret_cast<const int64_t*>(src), n,
                         op);
    case DType::kBF16:
      return ReduceWide(dst, src, n, op, BF16ToFloat, FloatToBF16);
    case DType::kF16:
      return ReduceWide(dst, src, n, op, F16ToFloat, FloatToF16);
  }
}

// Calls fn(dst row, src row, bytes) for each row of the two regions (of one shape) in order.
template <typename Fn>
void ZipRows(const Tensor& src, const Region& src_region, Tensor& dst, const Region& dst_region,
             Fn fn) {
  if (src_region.empty()) return;
  const int64_t elem = DTypeSize(src.dtype());
  const int64_t row = src_region.rank() ? src_region.ranges.back().size() : 1;
  std::vector<int64_t> src_offsets;
  ForEachRow(src.shape(), src_region, [&](int64_t, int64_t off) { src_offsets.push_back(off); });
  size_t i = 0;
  ForEachRow(dst.shape(), dst_region, [&](int64_t, int64_t off) {
    fn(dst.raw() + off * elem, src.raw() + src_offsets[i++] * elem, row * elem);
  });
}

// ShapeError naming `what` unless src[src_region] and dst[dst_region] are boxes of one shape
// inside their tensors, of one dtype.
void CheckRegionsFit(const char* what, const Tensor& src, const Region& src_region,
                     const Tensor& dst, const Region& dst_region) {
  if (src.dtype() != dst.dtype() || src_region.shape() != dst_region.shape() ||
      src_region.rank() != src.shape().rank() || dst_region.rank() != dst.shape().rank() ||
      !Region::Full(src.shape()).Contains(src_region) ||
      !Region::Full(dst.shape()).Contains(dst_region)) {
    throw ShapeError(std::string(what) + " " + src_region.ToString() + " of " +
                     src.shape().ToString() + " into " + dst_region.ToString() + " of " +
                     dst.shape().ToString() + " does not fit");
  }
}

}  // namespace

Tensor::Tensor(Shape shape, DType dtype)
    : shape_(std::move(shape)), dtype_(dtype), bytes_(shape_.numel() * DTypeSize(dtype)) {}

Tensor::Tensor(const Tensor& other)
    : shape_(other.shape_),
      dtype_(other.dtype_),
      bytes_(other.raw(), other.raw() + other.nbytes()) {}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

Tensor Tensor::View(Shape shape, DType dtype, std::byte* data) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  if (data == nullptr && t.shape_.numel() > 0) {
    throw InvalidArgumentError("tensor view of " + std::string(DTypeName(dtype)) +
                               t.shape_.ToString() + " over null memory");
  }
  t.view_ = data;
  return t;
}

Tensor Tensor::Random(Shape shape, DType dtype, Rng& rng) {
  Tensor t(std::move(shape), dtype);
  for (int64_t i = 0, end = t.numel(); i < end; ++i) {
    t.SetDouble(i, IsFloating(dtype) ? rng.Uniform(-1.0, 1.0)
                                     : static_cast<double>(rng.UniformInt(-100, 100)));
  }
  return t;
}

double Tensor::GetDouble(int64_t i) const {
  switch (dtype_) {
    case DType::kF32:
      return data<float>()[i];
    case DType::kF64:
      return data<double>()[i];
    case DType::kI32:
      return data<int32_t>()[i];
    case DType::kI64:
      return static_cast<double>(data<int64_t>()[i]);
    case DType::kBF16:
      return BF16ToFloat(data<uint16_t>()[i]);
    case DType::kF16:
      return F16ToFloat(data<uint16_t>()[i]);
  }
  return 0;
}

void Tensor::SetDouble(int64_t i, double v) {
  switch (dtype_) {
    case DType::kF32:
      data<float>()[i] = static_cast<float>(v);
      break;
    case DType::kF64:
      data<double>()[i] = v;
      break;
    case DType::kI32:
      data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case DType::kI64:
      data<int64_t>()[i] = static_cast<int64_t>(v);
      break;
    case DType::kBF16:
      data<uint16_t>()[i] = FloatToBF16(static_cast<float>(v));
      break;
    case DType::kF16:
      data<uint16_t>()[i] = FloatToF16(static_cast<float>(v));
      break;
  }
}

Tensor Tensor::Slice(const Region& region) const {
  Tensor out(region.shape(), dtype_);
  out.CopyRegionFrom(*this, region, Region::Full(out.shape()));
  return out;
}

void Tensor::CopyRegionFrom(const Tensor& src, const Region& src_region, const Region& dst_region) {
  CheckRegionsFit("region copy", src, src_region, *this, dst_region);
  ZipRows(src, src_region, *this, dst_region,
          [](std::byte* to, const std::byte* from, int64_t n) { std::memcpy(to, from, n); });
}

void Tensor::Fill(double value) {
  for (int64_t i = 0, end = numel(); i < end; ++i) SetDouble(i, value);
}

void Tensor::FillIdentity(ReduceOp op) {
  if (op == ReduceOp::kSum) {
    std::fill_n(raw(), nbytes(), std::byte{0});
    return;
  }
  const bool max = op == ReduceOp::kMax;
  switch (dtype_) {
    case DType::kI32:
      std::fill_n(
          data<int32_t>(), numel(),
          max ? std::numeric_limits<int32_t>::lowest() : std::numeric_limits<int32_t>::max());
      return;
    case DType::kI64:
      std::fill_n(
          data<int64_t>(), numel(),
          max ? std::numeric_limits<int64_t>::lowest() : std::numeric_limits<int64_t>::max());
      return;
    default:
      Fill(max ? -std::numeric_limits<double>::infinity()
               : std::numeric_limits<double>::infinity());
  }
}

void Tensor::ReduceFrom(const Tensor& other, ReduceOp op) {
  if (other.shape_ != shape_ || other.dtype_ != dtype_) {
    throw ShapeError("cannot reduce " + std::string(DTypeName(other.dtype_)) +
                     other.shape_.ToString() + " into " + DTypeName(dtype_) + shape_.ToString());
  }
  ReduceElements(raw(), other.raw(), numel(), dtype_, op);
}

void Tensor::ReduceRegionFrom(const Tensor& src, const Region& src_region, const Region& dst_region,
                              ReduceOp op) {
  CheckRegionsFit("region reduction", src, src_region, *this, dst_region);
  const int64_t elem = DTypeSize(dtype_);
  ZipRows(src, src_region, *this, dst_region, [&](std::byte* to, const std::byte* from, int64_t n) {
    ReduceElements(to, from, n / elem, dtype_, op);
  });
}

std::string Tensor::ToString(int64_t max_elements) const {
  std::string s = std::string(DTypeName(dtype_)) + shape_.ToString() + "{";
  for (int64_t i = 0; i < std::min(numel(), max_elements); ++i) {
    if (i) s += ", ";
    const double v = GetDouble(i);
    s += IsFloating(dtype_) ? std::to_string(v) : std::to_string(static_cast<int64_t>(v));
  }
  if (numel() > max_elements) s += ", ...";
  return s + "}";
}

int64_t FirstNonFinite(const Tensor& t) {
  const int64_t n = t.numel();
  const auto scan = [n](const auto* data) -> int64_t {
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(data[i])) return i;
    }
    return -1;
  };
  if (t.dtype() == DType::kF32) return scan(t.data<float>());
  if (t.dtype() == DType::kF64) return scan(t.data<double>());
  if (!IsFloating(t.dtype())) return -1;
  for (int64_t i = 0; i < n; ++i) {  // 16-bit floats, through their widening
    if (!std::isfinite(t.GetDouble(i))) return i;
  }
  return -1;
}

bool BitEqual(const Tensor& a, const Tensor& b) {
  // memcmp of no bytes may still not take null pointers (an empty tensor's).
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

double CloseRatio(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
    return std::numeric_limits<double>::infinity();
  }
  double worst = 0;
  for (int64_t i = 0, end = a.numel(); i < end; ++i) {
    const double x = a.GetDouble(i), y = b.GetDouble(i);
    if (x == y || (std::isnan(x) && std::isnan(y))) continue;  // also equal infinities
    const double ratio = std::fabs(x - y) / (atol + rtol * std::fabs(y));
    worst = std::max(worst, std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio);
  }
  return worst;
}

}  // namespace twinflow
