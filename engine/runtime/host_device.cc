#include "engine/runtime/host_device.h"

#include <algorithm>
#include <exception>
#include <string>

#include "engine/core/error.h"

namespace twinflow::runtime {
namespace {

constexpr int64_t kAlignment = 256;

void CheckSameBytes(const Tensor& src, const Tensor& dst) {
  if (src.nbytes() != dst.nbytes()) {
    throw PlanError("a copy of " + std::to_string(src.nbytes()) + " bytes into " +
                    std::to_string(dst.nbytes()));
  }
}

}  // namespace

HostDevice::HostDevice(int64_t index) : Device("cpu:" + std::to_string(index)) {}

std::byte* HostDevice::AllocateArena(int64_t bytes) {
  try {
    arena_.assign(static_cast<size_t>(bytes + kAlignment), std::byte{0});
  } catch (const std::exception&) {  // bad_alloc, or length_error for absurd sizes
    throw OutOfMemoryError(name() + ": cannot allocate an arena of " + std::to_string(bytes) +
                           " bytes");
  }
  const auto address = reinterpret_cast<uintptr_t>(arena_.data());
  return arena_.data() + (kAlignment - address % kAlignment) % kAlignment;
}

void HostDevice::RunKernel(const kernels::Kernel& kernel, kernels::KernelContext& ctx) {
  kernel(ctx);
}

void HostDevice::Zero(Tensor& dst) { std::fill_n(dst.raw(), dst.nbytes(), std::byte{0}); }

void HostDevice::Copy(const Tensor& src, Tensor& dst) {
  CheckSameBytes(src, dst);
  std::copy_n(src.raw(), src.nbytes(), dst.raw());
}

void HostDevice::CopyRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to) {
  dst.CopyRegionFrom(src, from, to);
}

void HostDevice::ReduceInto(const Tensor& src, Tensor& dst, ReduceOp op) {
  dst.ReduceFrom(src, op);
}

void HostDevice::ReduceRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to,
                              ReduceOp op) {
  dst.ReduceRegionFrom(src, from, to, op);
}

Tensor HostDevice::Zeros(const Shape& shape, DType dtype) {
  const size_t bytes = static_cast<size_t>(shape.numel() * DTypeSize(dtype));
  if (zeros_.empty() || zeros_.back().size() < bytes) {
    zeros_.emplace_back(std::max<size_t>(bytes, 64), std::byte{0});
  }
  return Tensor::View(shape, dtype, zeros_.back().data());
}

void HostDevice::Upload(const Tensor& host, Tensor& dst) { Copy(host, dst); }

Tensor HostDevice::Download(const Tensor& src) { return Tensor(src); }

}  // namespace twinflow::runtime
