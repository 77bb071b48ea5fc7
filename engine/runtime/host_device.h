#pragma once
// HostDevice: a cpu device. Its memory is host memory and every operation is done on the
// calling thread before the call returns.
#include <vector>

#include "engine/runtime/device.h"

namespace twinflow::runtime {

class HostDevice : public Device {
 public:
  explicit HostDevice(int64_t index);
  DeviceType type() const override { return DeviceType::kCpu; }
  std::byte* AllocateArena(int64_t bytes) override;
  void RunKernel(const kernels::Kernel& kernel, kernels::KernelContext& ctx) override;
  void Zero(Tensor& dst) override;
  void Copy(const Tensor& src, Tensor& dst) override;
  void CopyRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to) override;
  void ReduceInto(const Tensor& src, Tensor& dst, ReduceOp op) override;
  void ReduceRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to,
                    ReduceOp op) override;
  Tensor Zeros(const Shape& shape, DType dtype) override;
  void Upload(const Tensor& host, Tensor& dst) override;
  Tensor Download(const Tensor& src) override;

 private:
  std::vector<std::byte> arena_;
  // Zero buffers handed out; a larger request adds one, so earlier views stay valid.
  std::vector<std::vector<std::byte>> zeros_;
};

}  // namespace twinflow::runtime
