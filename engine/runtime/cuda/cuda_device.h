#pragma once
// CudaDevice: a cuda logical device of a Plan, on one physical GPU (device_place.h: under
// mpirun each rank takes its own; several logical devices may share a GPU, each with its own
// streams and arena). It owns a compute stream, on which kernels, device copies and reductions run
// in call order, and a copy stream for host transfers, ordered against the compute stream by
// events. The device thread of the ThreadedExecutor that owns it is the only one enqueueing work on
// it while a run goes on. Built with CUDA only (TWINFLOW_HAVE_CUDA); built, not verified on a GPU.
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "engine/runtime/cuda/event_pool.h"
#include "engine/runtime/device.h"
#include "kernels/cuda/cuda_env.h"

namespace twinflow::runtime {

class CudaDevice : public Device {
 public:
  // Logical device cuda:`index` at `place` (on the GPU GpuFor gives). DeviceError naming the
  // device when no GPU is present or its streams cannot be made.
  // `allow_tf32`: DeviceOptions::allow_tf32.
  CudaDevice(int64_t index, const DevicePlace& place, bool allow_tf32 = false);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  DeviceType type() const override { return DeviceType::kCuda; }
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
  bool asynchronous() const override { return true; }
  Fence Mark() override;
  bool Passed(const Fence& fence) override;
  void Synchronize() override;
  bool Reaches(const Tensor& t) override;
  void BindThread() override;

 private:
  // Runs fn with this device's GPU current; errors come out prefixed with the device's name.
  template <typename Fn>
  void OnGpu(Fn&& fn);
  void EnablePeerAccess();
  int OwnerOf(const Tensor& t) const;
  void CheckReadable(const Tensor& t);
  Fence Record(cudaStream_t stream);

  int gpu_ = 0;
  std::vector<bool> readable_;                  // by GPU: whose memory this GPU's kernels may read
  std::unique_ptr<kernels::OwnedCudaEnv> env_;  // the compute stream and library handles
  cudaStream_t copy_stream_ = nullptr;
  // The fences' events; shared with every fence, which may outlive this device.
  std::shared_ptr<cuda::EventPool> events_ = cuda::EventPool::Make();
  void* arena_ = nullptr;
  std::vector<void*> zeros_;  // zeroed buffers handed out by Zeros, each larger than the last
  int64_t zeros_bytes_ = 0;
};

}  // namespace twinflow::runtime
