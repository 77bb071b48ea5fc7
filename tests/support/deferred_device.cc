#include "tests/support/deferred_device.h"

#include <utility>
#include <vector>

namespace twinflow::testing {
namespace {

// A view of the same bytes: what a queued operation keeps of a tensor whose object may be gone
// (the runtime hands views built on its stack) when the operation runs.
Tensor SameBytes(const Tensor& t) {
  return Tensor::View(t.shape(), t.dtype(), const_cast<std::byte*>(t.raw()));
}

}  // namespace

DeferredHostDevice::DeferredHostDevice(int64_t index)
    : Device("deferred:" + std::to_string(index)), host_(index) {}

DeferredHostDevice::~DeferredHostDevice() {
  if (on_destroy) on_destroy(deferred_polls_);
}

void DeferredHostDevice::Enqueue(std::function<void()> work) {
  queue_.push_back(std::move(work));
  ++queued_;
}

void DeferredHostDevice::RunOne() {
  std::function<void()> work = std::move(queue_.front());
  queue_.pop_front();
  work();
  ++done_;
}

// The context's tensors are copied as views, and its regions and shapes by value; the attrs
// and the kernel belong to the executor's prepared tasks, which outlive the run.
void DeferredHostDevice::RunKernel(const kernels::Kernel& kernel, kernels::KernelContext& ctx) {
  auto inputs = std::make_shared<std::vector<Tensor>>();
  auto outputs = std::make_shared<std::vector<Tensor>>();
  for (const Tensor* t : ctx.inputs) inputs->push_back(SameBytes(*t));
  for (const Tensor* t : ctx.outputs) outputs->push_back(SameBytes(*t));
  Enqueue([&kernel, &attrs = ctx.attrs, inputs, outputs, in_regions = ctx.input_regions,
           out_regions = ctx.output_regions, in_logical = ctx.input_logical_shapes,
           out_logical = ctx.output_logical_shapes] {
    kernels::KernelContext later{attrs, {}, {}, in_regions, out_regions, in_logical, out_logical};
    for (const Tensor& t : *inputs) later.inputs.push_back(&t);
    for (Tensor& t : *outputs) later.outputs.push_back(&t);
    kernel(later);
  });
}

void DeferredHostDevice::Zero(Tensor& dst) {
  Enqueue([this, d = SameBytes(dst)]() mutable { host_.Zero(d); });
}

void DeferredHostDevice::Copy(const Tensor& src, Tensor& dst) {
  Enqueue([this, s = SameBytes(src), d = SameBytes(dst)]() mutable { host_.Copy(s, d); });
}

void DeferredHostDevice::CopyRegion(const Tensor& src, const Region& from, Tensor& dst,
                                    const Region& to) {
  Enqueue([this, s = SameBytes(src), from, d = SameBytes(dst), to]() mutable {
    host_.CopyRegion(s, from, d, to);
  });
}

void DeferredHostDevice::ReduceInto(const Tensor& src, Tensor& dst, ReduceOp op) {
  Enqueue(
      [this, s = SameBytes(src), d = SameBytes(dst), op]() mutable { host_.ReduceInto(s, d, op); });
}

void DeferredHostDevice::ReduceRegion(const Tensor& src, const Region& from, Tensor& dst,
                                      const Region& to, ReduceOp op) {
  Enqueue([this, s = SameBytes(src), from, d = SameBytes(dst), to, op]() mutable {
    host_.ReduceRegion(s, from, d, to, op);
  });
}

// The host bytes are staged at once, as a GPU's pageable upload does.
void DeferredHostDevice::Upload(const Tensor& host, Tensor& dst) {
  Enqueue([this, staged = Tensor(host), d = SameBytes(dst)]() mutable { host_.Copy(staged, d); });
}

Tensor DeferredHostDevice::Download(const Tensor& src) {
  Synchronize();
  return host_.Download(src);
}

runtime::Device::Fence DeferredHostDevice::Mark() { return std::make_shared<int64_t>(queued_); }

bool DeferredHostDevice::Passed(const Fence& fence) {
  const int64_t until = *static_cast<const int64_t*>(fence.get());
  if (done_ >= until) return true;
  ++deferred_polls_;
  RunOne();  // progress, one operation per poll
  return false;
}

void DeferredHostDevice::Synchronize() {
  while (!queue_.empty()) RunOne();
}

std::unique_ptr<runtime::Device> MakeDeferredDevice(const plan::Device& device,
                                                    const runtime::DevicePlace&) {
  return std::make_unique<DeferredHostDevice>(device.index());
}

}  // namespace twinflow::testing
