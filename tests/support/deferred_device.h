#pragma once
// DeferredHostDevice: a test device that behaves as a GPU does towards the runtime, on the host.
// Every operation is queued instead of done, and runs only later: one queued operation per
// poll of a fence that has not passed (as a GPU makes progress while the device thread polls),
// and all of them before a Download or a Synchronize returns. So an act the runtime completed
// before its fence had passed, a slot reused while a later-running copy still reads it, or a
// collective reported done too early, would read or leave wrong bytes, and the losses would
// differ from a HostDevice run. It tests the asynchronous protocol of the ThreadedExecutor
// (fences, deferred completions, synchronisation) without a GPU; it is no model of CUDA.
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "engine/runtime/host_device.h"

namespace twinflow::testing {

class DeferredHostDevice : public runtime::Device {
 public:
  explicit DeferredHostDevice(int64_t index);
  DeviceType type() const override { return DeviceType::kCuda; }  // any non-host type
  std::byte* AllocateArena(int64_t bytes) override { return host_.AllocateArena(bytes); }
  void RunKernel(const kernels::Kernel& kernel, kernels::KernelContext& ctx) override;
  void Zero(Tensor& dst) override;
  void Copy(const Tensor& src, Tensor& dst) override;
  void CopyRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to) override;
  void ReduceInto(const Tensor& src, Tensor& dst, ReduceOp op) override;
  void ReduceRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to,
                    ReduceOp op) override;
  Tensor Zeros(const Shape& shape, DType dtype) override { return host_.Zeros(shape, dtype); }
  void Upload(const Tensor& host, Tensor& dst) override;
  Tensor Download(const Tensor& src) override;
  bool asynchronous() const override { return true; }
  Fence Mark() override;
  bool Passed(const Fence& fence) override;
  void Synchronize() override;

  ~DeferredHostDevice() override;
  // Called at destruction with the number of polls that found work pending (a test's evidence
  // that completions really waited).
  std::function<void(int64_t)> on_destroy;

 private:
  void Enqueue(std::function<void()> work);
  void RunOne();

  runtime::HostDevice host_;
  std::deque<std::function<void()>> queue_;
  int64_t queued_ = 0;  // operations enqueued so far
  int64_t done_ = 0;    // operations run so far
  int64_t deferred_polls_ = 0;
};

// The polls that found work pending, summed over the devices it watched when they are gone:
// a test's evidence that completions really waited. Must outlive the devices it watches.
class PollTally {
 public:
  void Watch(DeferredHostDevice& device) {
    polls_.push_back(0);
    device.on_destroy = [this, i = polls_.size() - 1](int64_t n) { polls_[i] = n; };
  }
  int64_t Total() const {
    int64_t total = 0;
    for (int64_t n : polls_) total += n;
    return total;
  }

 private:
  std::vector<int64_t> polls_;
};

// A DeviceFactory giving every device a DeferredHostDevice.
std::unique_ptr<runtime::Device> MakeDeferredDevice(const plan::Device& device,
                                                    const runtime::DevicePlace& place);

}  // namespace twinflow::testing
