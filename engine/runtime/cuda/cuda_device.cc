#include "engine/runtime/cuda/cuda_device.h"

#include <algorithm>
#include <new>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cuda/box_copy.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_types.h"
#include "kernels/cuda/reduce_into_launch.h"
#include "kernels/cuda/shape_launch.h"

namespace twinflow::runtime {
namespace {

int GpuOf(int64_t index, const DevicePlace& place) {
  std::string reason;
  const int count = kernels::CudaDeviceCount(&reason);
  if (count == 0) {
    throw DeviceError("cuda:" + std::to_string(index) + ": no CUDA GPU is available (" + reason +
                      ")");
  }
  return GpuFor(place, count);
}

void CheckSameBytes(const Tensor& src, const Tensor& dst) {
  if (src.nbytes() != dst.nbytes()) {
    throw PlanError("a copy of " + std::to_string(src.nbytes()) + " bytes into " +
                    std::to_string(dst.nbytes()));
  }
}

// src[from] -> dst[to] as a box; ShapeError naming the region `what` when it does not fit.
kernels::cuda::BoxCopy RegionBox(const char* what, const Tensor& src, const Region& from,
                                 const Tensor& dst, const Region& to) {
  if (src.dtype() != dst.dtype()) {
    throw ShapeError(std::string("a region ") + what + " of " + DTypeName(src.dtype()) + " into " +
                     DTypeName(dst.dtype()));
  }
  return kernels::cuda::MakeBox(src.shape(), from, dst.shape(), to, src.dtype());
}

}  // namespace

namespace {

// The GPU a device thread was bound to (CudaDevice::BindThread); -1 on other threads.
thread_local int tls_bound_gpu = -1;

}  // namespace

// On a device thread bound to this GPU, fn just runs: no device switch per operation (which
// would also make a context on GPU 0 when switching back). On other threads the caller's
// current GPU comes back afterwards, so that code sharing the thread (the user's PyTorch, on
// the thread that builds the executor or reads variables) keeps its device. Errors come out
// prefixed with the device's name; host allocation failures as OutOfMemoryError.
template <typename Fn>
void CudaDevice::OnGpu(Fn&& fn) {
  const bool bound = tls_bound_gpu == gpu_;
  int previous = gpu_;
  const auto restore = [&] {
    if (!bound && previous != gpu_) cudaSetDevice(previous);
  };
  try {
    if (!bound) {
      TF_CUDA_CHECK(cudaGetDevice(&previous));
      if (previous != gpu_) TF_CUDA_CHECK(cudaSetDevice(gpu_));
    }
    fn();
  } catch (const Error& e) {
    restore();
    RethrowPrefixed(e, name() + ": ");
  } catch (const std::bad_alloc&) {
    restore();
    throw OutOfMemoryError(name() + ": out of host memory");
  }
  if (!bound && previous != gpu_) TF_CUDA_CHECK(cudaSetDevice(previous));
}

void CudaDevice::BindThread() {
  TF_CUDA_CHECK(cudaSetDevice(gpu_));
  tls_bound_gpu = gpu_;
}

CudaDevice::CudaDevice(int64_t index, const DevicePlace& place, bool allow_tf32)
    : Device("cuda:" + std::to_string(index)), gpu_(GpuOf(index, place)) {
  OnGpu([&] {
    env_ = std::make_unique<kernels::OwnedCudaEnv>(gpu_, size_t{32} << 20, allow_tf32);
    TF_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
    EnablePeerAccess();
  });
}

CudaDevice::~CudaDevice() {
  int previous = gpu_;
  cudaGetDevice(&previous);
  cudaSetDevice(gpu_);
  // Pending work must not outlive the memory it uses; errors cannot be raised here.
  if (env_) cudaStreamSynchronize(env_->env().stream);
  if (copy_stream_) {
    cudaStreamSynchronize(copy_stream_);
    cudaStreamDestroy(copy_stream_);
  }
  for (void* z : zeros_) cudaFree(z);
  if (arena_) cudaFree(arena_);
  env_.reset();
  cudaSetDevice(previous);
}

// Lets kernels on this GPU read the others' memory (in-process boxing and all-reduces read
// their peers' slots directly) and records which it can read: CheckReadable refuses the others
// before a kernel would fault on them.
void CudaDevice::EnablePeerAccess() {
  int count = 0;
  TF_CUDA_CHECK(cudaGetDeviceCount(&count));
  readable_.assign(count, false);
  readable_[gpu_] = true;
  for (int peer = 0; peer < count; ++peer) {
    int can = 0;
    if (peer == gpu_) continue;
    if (cudaDeviceCanAccessPeer(&can, gpu_, peer) != cudaSuccess || !can) {
      cudaGetLastError();  // a failed query leaves its error for the next launch check
      continue;
    }
    const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // the same: not an error here
    } else {
      TF_CUDA_CHECK(status);
    }
    readable_[peer] = true;
  }
}

// The GPU whose memory holds `t`, or -1 when it is not device memory.
int CudaDevice::OwnerOf(const Tensor& t) const {
  cudaPointerAttributes attributes{};
  TF_CUDA_CHECK(cudaPointerGetAttributes(&attributes, t.raw()));
  return attributes.type == cudaMemoryTypeDevice ? attributes.device : -1;
}

bool CudaDevice::Reaches(const Tensor& t) {
  if (t.nbytes() == 0) return true;
  const int owner = OwnerOf(t);
  return owner >= 0 && owner < static_cast<int>(readable_.size()) && readable_[owner];
}

// DeviceError unless this GPU's kernels can read and write `t` (its own memory, or a peer's it
// has access to): without access a kernel would raise a sticky fault that ends every logical
// device on it.
void CudaDevice::CheckReadable(const Tensor& t) {
  if (Reaches(t)) return;
  throw DeviceError("GPU " + std::to_string(gpu_) + " cannot reach memory of GPU " +
                    std::to_string(OwnerOf(t)) + " (no peer access between them)");
}

std::byte* CudaDevice::AllocateArena(int64_t bytes) {
  OnGpu([&] {
    // cudaMalloc aligns to at least 256 bytes; one byte keeps an empty arena's pointer valid.
    const cudaError_t status = cudaMalloc(&arena_, static_cast<size_t>(bytes > 0 ? bytes : 1));
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemoryError("cannot allocate an arena of " + std::to_string(bytes) +
                             " bytes on GPU " + std::to_string(gpu_));
    }
    TF_CUDA_CHECK(status);
    // Zeroed once, as the host's arena is: a run reads what its Plan wrote, and were it ever to
    // read an unwritten byte, GPU and CPU would still agree.
    TF_CUDA_CHECK(cudaMemset(arena_, 0, static_cast<size_t>(bytes > 0 ? bytes : 1)));
  });
  return static_cast<std::byte*>(arena_);
}

void CudaDevice::RunKernel(const kernels::Kernel& kernel, kernels::KernelContext& ctx) {
  OnGpu([&] {
    ctx.cuda = env_->get();
    kernel(ctx);
  });
}

void CudaDevice::Zero(Tensor& dst) {
  OnGpu([&] { TF_CUDA_CHECK(cudaMemsetAsync(dst.raw(), 0, dst.nbytes(), env_->env().stream)); });
}

void CudaDevice::Copy(const Tensor& src, Tensor& dst) {
  CheckSameBytes(src, dst);
  if (src.nbytes() == 0) return;
  OnGpu([&] {  // cudaMemcpyDefault reaches any GPU, through the host where it must
    TF_CUDA_CHECK(
        cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDefault, env_->env().stream));
  });
}

void CudaDevice::CopyRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to) {
  const kernels::cuda::BoxCopy box = RegionBox("copy", src, from, dst, to);
  if (from.shape().numel() == 0) return;
  OnGpu([&] {
    CheckReadable(src);
    CheckReadable(dst);
    kernels::cuda::LaunchBoxCopy(src.raw(), dst.raw(), box, DTypeSize(src.dtype()),
                                 env_->env().stream);
  });
}

void CudaDevice::ReduceInto(const Tensor& src, Tensor& dst, ReduceOp op) {
  if (src.shape() != dst.shape() || src.dtype() != dst.dtype()) {
    throw ShapeError("cannot reduce " + std::string(DTypeName(src.dtype())) +
                     src.shape().ToString() + " into " + DTypeName(dst.dtype()) +
                     dst.shape().ToString());
  }
  OnGpu([&] {
    CheckReadable(src);
    CheckReadable(dst);
    kernels::cuda::LaunchReduceInto(dst.raw(), src.raw(), dst.numel(), dst.dtype(), op,
                                    env_->env().stream);
  });
}

void CudaDevice::ReduceRegion(const Tensor& src, const Region& from, Tensor& dst, const Region& to,
                              ReduceOp op) {
  const kernels::cuda::BoxCopy box = RegionBox("reduction", src, from, dst, to);
  if (from.shape().numel() == 0) return;
  OnGpu([&] {
    CheckReadable(src);
    CheckReadable(dst);
    kernels::cuda::LaunchReduceBoxInto(dst.raw(), src.raw(), box, dst.dtype(), op,
                                       env_->env().stream);
  });
}

Tensor CudaDevice::Zeros(const Shape& shape, DType dtype) {
  const int64_t bytes = std::max<int64_t>(shape.numel() * DTypeSize(dtype), 256);
  if (bytes > zeros_bytes_) {
    OnGpu([&] {
      void* buffer = nullptr;
      TF_CUDA_CHECK(cudaMalloc(&buffer, static_cast<size_t>(bytes)));
      zeros_.push_back(buffer);
      TF_CUDA_CHECK(cudaMemsetAsync(buffer, 0, static_cast<size_t>(bytes), env_->env().stream));
    });
    zeros_bytes_ = bytes;
  }
  return Tensor::View(shape, dtype, static_cast<std::byte*>(zeros_.back()));
}

// The host bytes go to a staging buffer before cudaMemcpyAsync returns (pageable memory), so
// `host` may go away at once. The copy waits for the compute stream's earlier work (call order),
// and the compute stream for the copy, both through events.
void CudaDevice::Upload(const Tensor& host, Tensor& dst) {
  CheckSameBytes(host, dst);
  if (host.nbytes() == 0) return;
  OnGpu([&] {
    const Fence computed = Record(env_->env().stream);
    TF_CUDA_CHECK(cudaStreamWaitEvent(copy_stream_, static_cast<cudaEvent_t>(computed.get()), 0));
    TF_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), host.raw(), host.nbytes(), cudaMemcpyHostToDevice,
                                  copy_stream_));
    const Fence copied = Record(copy_stream_);
    TF_CUDA_CHECK(
        cudaStreamWaitEvent(env_->env().stream, static_cast<cudaEvent_t>(copied.get()), 0));
  });
}

Tensor CudaDevice::Download(const Tensor& src) {
  Tensor host(src.shape(), src.dtype());
  if (host.nbytes() == 0) return host;
  OnGpu([&] {
    const Fence computed = Record(env_->env().stream);
    TF_CUDA_CHECK(cudaStreamWaitEvent(copy_stream_, static_cast<cudaEvent_t>(computed.get()), 0));
    TF_CUDA_CHECK(
        cudaMemcpyAsync(host.raw(), src.raw(), src.nbytes(), cudaMemcpyDeviceToHost, copy_stream_));
    TF_CUDA_CHECK(cudaStreamSynchronize(copy_stream_));
    kernels::CheckDeviceFaults(env_->env());
  });
  return host;
}

// An event recorded on `stream`; destroyed with the last reference (CUDA lets an event be
// destroyed while work before it is pending). The caller has made the GPU current.
Device::Fence CudaDevice::Record(cudaStream_t stream) { return events_->Record(stream); }

Device::Fence CudaDevice::Mark() {
  Fence fence;
  OnGpu([&] { fence = Record(env_->env().stream); });
  return fence;
}

bool CudaDevice::Passed(const Fence& fence) {
  bool passed = false;
  OnGpu([&] {
    const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(fence.get()));
    if (status == cudaErrorNotReady) {
      cudaGetLastError();  // the runtime records NotReady too: the next launch check must not see
                           // it
      return;
    }
    TF_CUDA_CHECK(status);
    kernels::CheckDeviceFaults(env_->env());
    passed = true;
  });
  return passed;
}

void CudaDevice::Synchronize() {
  OnGpu([&] {  // both streams, whatever the first reports; then its error
    const cudaError_t copies = cudaStreamSynchronize(copy_stream_);
    env_->Synchronize();
    TF_CUDA_CHECK(copies);
  });
}

}  // namespace twinflow::runtime
