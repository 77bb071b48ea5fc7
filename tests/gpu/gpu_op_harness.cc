#include "tests/gpu/gpu_op_harness.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "kernels/cuda/cuda_check.h"

namespace twinflow::testing {
namespace {

bool IsFloatType(DType d) { return d == DType::kF32 || d == DType::kF64 || d == DType::kBF16; }

Tensor Converted(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out(t.shape(), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) out.SetDouble(i, t.GetDouble(i));
  return out;
}

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

OpInstance WithFloatDType(const OpInstance& instance, DType dtype) {
  OpInstance out = instance;
  for (size_t i = 0; i < out.inputs.size(); ++i) {
    const bool f32 = std::count(out.f32_inputs.begin(), out.f32_inputs.end(), i) > 0;
    if (IsFloatType(out.inputs[i].dtype) && !f32) out.inputs[i].dtype = dtype;
  }
  if (out.attrs.Has("dtype") && IsFloatType(ParseDType(out.attrs.GetString("dtype")))) {
    out.attrs.Set("dtype", std::string(DTypeName(dtype)));
  }
  return out;
}

PairedInstance Pair(const OpInstance& instance, DType dtype, Rng& rng) {
  PairedInstance p;
  p.dtype = dtype;
  p.cpu = WithFloatDType(instance, DType::kF32);
  p.gpu = WithFloatDType(instance, dtype);
  for (size_t i = 0; i < instance.inputs.size(); ++i) {
    const Tensor filled = FillInput(instance, static_cast<int>(i), rng);
    p.gpu_inputs.push_back(Converted(filled, p.gpu.inputs[i].dtype));
    p.cpu_inputs.push_back(Converted(p.gpu_inputs.back(), p.cpu.inputs[i].dtype));
  }
  return p;
}

std::vector<Tensor> RunOnDevice(const kernels::KernelRegistry& cuda, const OpRunner& runner,
                                const PairedInstance& paired, const kernels::OwnedCudaEnv& env) {
  std::vector<graph::TensorMeta> metas = runner.OutputMetas(paired.cpu);
  const std::vector<int>& f32 = paired.gpu.f32_outputs;
  for (size_t o = 0; o < metas.size(); ++o) {
    // The CPU side's floats are all f32; the device's are the dtype under test but for those
    // the op keeps in f32.
    if (IsFloatType(metas[o].dtype) && !std::count(f32.begin(), f32.end(), o)) {
      metas[o].dtype = paired.dtype;
    }
  }
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

std::string CompareWithTolerance(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                 DType dtype) {
  if (got.size() != want.size()) return "output count differs";
  // f32: the device accumulates in double like the CPU, so only the last bits differ (FMA,
  // CUDA's transcendental functions, cuBLASLt's order). bf16: the output's own rounding
  // (2^-9 relative) and float accumulation, within 1e-2 of the magnitude.
  const double rtol = dtype == DType::kBF16 ? 1.6e-2 : 2e-5;
  const double atol = dtype == DType::kBF16 ? 1e-2 : 2e-5;
  for (size_t o = 0; o < got.size(); ++o) {
    if (got[o].shape() != want[o].shape()) return "output " + std::to_string(o) + " shape differs";
    double magnitude = 1.0;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      const double v = std::fabs(want[o].GetDouble(i));
      if (std::isfinite(v)) magnitude = std::max(magnitude, v);
    }
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      const double g = got[o].GetDouble(i), w = want[o].GetDouble(i);
      const bool exact = !IsFloating(want[o].dtype()) || !std::isfinite(w);
      const bool ok = exact ? (g == w || (std::isnan(g) && std::isnan(w)))
                            : std::fabs(g - w) <= rtol * std::fabs(w) + atol * magnitude;
      if (!ok) {
        return "output " + std::to_string(o) + " element " + std::to_string(i) + ": device " +
               std::to_string(g) + ", cpu " + std::to_string(w);
      }
    }
  }
  return "";
}

}  // namespace twinflow::testing
