#include "tests/gpu/gpu_op_harness.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "kernels/cuda/cuda_check.h"

namespace twinflow::testing {
namespace {

// Device memory for one tensor, freed with the owner.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(int64_t bytes) {
    if (bytes > 0) TF_CUDA_CHECK(cudaMalloc(&ptr, static_cast<size_t>(bytes)));
  }
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::byte* bytes() const { return static_cast<std::byte*>(ptr); }
};

}  // namespace

const std::string& NoCudaDeviceReason() {
  static const std::string reason = [] {
    std::string why;
    return kernels::CudaDeviceCount(&why) > 0 ? std::string() : why;
  }();
  return reason;
}

std::vector<Tensor> RunOnDevice(const kernels::KernelRegistry& cuda, const OpRunner& runner,
                                const PairedInstance& paired, const kernels::OwnedCudaEnv& env) {
  const std::vector<graph::TensorMeta> metas =
      PairedOutputMetas(runner.OutputMetas(paired.cpu), paired);
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::vector<Tensor> in_views, out_views;
  for (const Tensor& t : paired.gpu_inputs) {
    buffers.push_back(std::make_unique<DeviceBuffer>(t.nbytes()));
    if (t.nbytes() > 0) {
      TF_CUDA_CHECK(cudaMemcpy(buffers.back()->ptr, t.raw(), t.nbytes(), cudaMemcpyHostToDevice));
    }
    in_views.push_back(Tensor::View(t.shape(), t.dtype(), buffers.back()->bytes()));
  }
  for (const graph::TensorMeta& m : metas) {
    buffers.push_back(std::make_unique<DeviceBuffer>(m.shape.numel() * DTypeSize(m.dtype)));
    out_views.push_back(Tensor::View(m.shape, m.dtype, buffers.back()->bytes()));
  }
  std::vector<const Tensor*> in;
  for (const Tensor& t : in_views) in.push_back(&t);
  std::vector<Tensor*> out;
  for (Tensor& t : out_views) out.push_back(&t);
  kernels::KernelContext ctx = kernels::WholeTensorContext(paired.gpu.attrs, in, out);
  ctx.cuda = env.get();
  const DType key = !in.empty() ? in[0]->dtype() : metas.at(0).dtype;
  cuda.Find({paired.gpu.type, DeviceType::kCuda, key})(ctx);
  env.Synchronize();
  std::vector<Tensor> result;
  for (const Tensor& v : out_views) {
    result.emplace_back(v.shape(), v.dtype());
    if (v.nbytes() > 0) {
      TF_CUDA_CHECK(cudaMemcpy(result.back().raw(), v.raw(), v.nbytes(), cudaMemcpyDeviceToHost));
    }
  }
  return result;
}

}  // namespace twinflow::testing
