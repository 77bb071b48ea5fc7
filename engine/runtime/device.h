#pragma once
// Device: what the runtime does to the bytes of one device. Task work, variable reads and
// writes and the in-process collectives all go through it, so the same actors and device
// threads run a cpu device (HostDevice: each operation done when its call returns) and a cuda
// device (CudaDevice: operations enqueued in order on the device's streams, completion seen
// through events). Tensors handed to it are views of device memory; only their shape, dtype and
// address are read on the host.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/device_type.h"
#include "engine/core/reduce_op.h"
#include "engine/core/region.h"
#include "engine/core/tensor.h"
#include "engine/plan/plan.pb.h"
#include "engine/runtime/device_place.h"
#include "kernels/kernel.h"

namespace twinflow::runtime {

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceType type() const = 0;
  const std::string& name() const { return name_; }  // "cpu:3", "cuda:3 (GPU 0)"

  // The arena's `bytes`, aligned to 256 bytes, owned by the Device and freed with it (so the
  // Device must outlive its Arena); OutOfMemoryError naming the device when they cannot be had.
  virtual std::byte* AllocateArena(int64_t bytes) = 0;

  // Work on views of device memory, in call order. `src` may be another device's memory where
  // the runtime lets devices read each other (one process, peer access).
  virtual void RunKernel(const kernels::Kernel& kernel, kernels::KernelContext& ctx) = 0;
  virtual void Zero(Tensor& dst) = 0;
  virtual void Copy(const Tensor& src, Tensor& dst) = 0;  // equal byte counts
  virtual void CopyRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to) = 0;
  virtual void ReduceInto(const Tensor& src, Tensor& dst, ReduceOp op) = 0;  // dst = op(dst, src)
  // dst[to] = op(dst[to], src[from]); the regions have one shape.
  virtual void ReduceRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to,
                            ReduceOp op) = 0;
  // Zeros of `shape` and `dtype` in device memory, read-only, valid until the next call on this
  // device from another thread or the Device's end (a lagged register's first pieces read them).
  virtual Tensor Zeros(const Shape& shape, DType dtype) = 0;

  // Called once on the thread that will issue this device's work (its device thread), before
  // any: a CudaDevice makes its GPU that thread's current one for good.
  virtual void BindThread() {}

  // Whether this device's kernels may read and write `t` where it lies (its own memory, or a
  // peer's it has access to); Copy, Upload and Download reach any memory.
  virtual bool Reaches(const Tensor& t) { return true; }

  // Host transfers. Upload may return before the copy ran (the host bytes are staged first);
  // Download waits for the work before it and returns the bytes as an owning host tensor.
  virtual void Upload(const Tensor& host, Tensor& dst) = 0;
  virtual Tensor Download(const Tensor& src) = 0;

  // Completion. A fence marks the work enqueued so far; Passed says whether it has run, and
  // raises what the device reported meanwhile (a kernel's fault, an asynchronous error). A
  // HostDevice's work is done when its call returns: its fences are null and always passed.
  using Fence = std::shared_ptr<void>;
  virtual bool asynchronous() const { return false; }
  virtual Fence Mark() { return nullptr; }
  virtual bool Passed(const Fence& fence) { return true; }
  virtual void Synchronize() {}  // waits for all work, then as Passed

 protected:
  explicit Device(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

// How a run wants its devices' numerics where the hardware has a choice.
struct DeviceOptions {
  // f32 matmuls on a GPU may use TF32 tensor cores (10-bit mantissa products: faster, less
  // exact), as PyTorch's torch.backends.cuda.matmul.allow_tf32. Off unless asked.
  bool allow_tf32 = false;
};

// The Device for a Plan device at `place`: HostDevice for cpu, CudaDevice for cuda (on the GPU
// GpuFor gives). InvalidArgumentError for cuda in a build without CUDA; DeviceError when no GPU
// is present or it cannot be set up.
std::unique_ptr<Device> MakeDeviceWith(const plan::Device& device, const DevicePlace& place,
                                       const DeviceOptions& options);
// MakeDeviceWith the default options (the ThreadedExecutor's default DeviceFactory).
std::unique_ptr<Device> MakeDevice(const plan::Device& device, const DevicePlace& place);

}  // namespace twinflow::runtime
