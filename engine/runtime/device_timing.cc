#include "engine/runtime/device_timing.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "engine/core/rng.h"
#include "engine/plan/kernel_key.h"
#include "engine/plan/plan_enums.h"

namespace twinflow::runtime {
namespace {

constexpr int64_t kAlignment = 256;

int64_t Aligned(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Seconds per call: after a warm-up, batches of back-to-back calls each ended by a
// Synchronize, sized to about 20 ms; the median of three batches.
double SecondsPerCall(Device& device, const std::function<void()>& call) {
  call();
  device.Synchronize();
  auto start = std::chrono::steady_clock::now();
  call();
  device.Synchronize();
  const double one = std::max(Since(start), 1e-7);
  const int calls = std::clamp(static_cast<int>(0.02 / one), 1, 200);
  std::vector<double> batches;
  for (int b = 0; b < 3; ++b) {
    start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    device.Synchronize();
    batches.push_back(Since(start) / calls);
  }
  std::sort(batches.begin(), batches.end());
  return batches[1];
}

struct Operand {
  Shape shape;
  DType dtype;
};

std::vector<Operand> Operands(const PreparedTask& t, bool inputs) {
  std::vector<Operand> out;
  const auto& descs = inputs ? t.task->op().inputs() : t.task->op().outputs();
  for (const plan::TensorDesc& d : descs) {
    out.push_back({Shape(std::vector<int64_t>(d.shape().begin(), d.shape().end())),
                   plan::FromProto(d.dtype(), t.task->name())});
  }
  return out;
}

int64_t BytesOf(const PreparedTask& t) {
  int64_t bytes = 0;
  for (bool in : {true, false}) {
    for (const Operand& o : Operands(t, in)) bytes += Aligned(o.shape.numel() * DTypeSize(o.dtype));
  }
  return bytes;
}

// One task's kernel on views of `arena`: inputs uploaded, outputs after them.
double TimeKernel(const PreparedTask& t, Device& device, std::byte* arena, Rng& rng) {
  std::vector<Tensor> inputs, outputs;
  int64_t at = 0;
  for (bool in : {true, false}) {
    for (const Operand& o : Operands(t, in)) {
      Tensor view = Tensor::View(o.shape, o.dtype, arena + at);
      at += Aligned(view.nbytes());
      if (in) {
        device.Upload(
            IsFloating(o.dtype) ? Tensor::Random(o.shape, o.dtype, rng) : Tensor(o.shape, o.dtype),
            view);
      }
      (in ? inputs : outputs).push_back(std::move(view));
    }
  }
  kernels::KernelContext ctx{
      t.attrs, {}, {}, t.input_regions, t.output_regions, t.input_logical, t.output_logical};
  for (const Tensor& in : inputs) ctx.inputs.push_back(&in);
  for (Tensor& out : outputs) ctx.outputs.push_back(&out);
  return SecondsPerCall(device, [&] { device.RunKernel(t.kernel, ctx); });
}

}  // namespace

std::map<std::string, double> TimeKernels(const std::vector<PreparedTask>& tasks, Device& device,
                                          uint64_t seed) {
  int64_t largest = 0;
  for (const PreparedTask& t : tasks) {
    if (t.task->kind() == plan::COMPUTE) largest = std::max(largest, BytesOf(t));
  }
  std::byte* arena = device.AllocateArena(largest);
  Rng rng(seed);
  std::map<std::string, double> seconds;
  for (const PreparedTask& t : tasks) {
    if (t.task->kind() != plan::COMPUTE) continue;
    const std::string key = plan::KernelKey(*t.task);
    if (seconds.count(key) == 0) seconds[key] = TimeKernel(t, device, arena, rng);
  }
  return seconds;
}

double DeviceCopyBandwidth(Device& device, int64_t bytes) {
  std::byte* arena = device.AllocateArena(2 * Aligned(bytes));
  Tensor src = Tensor::View(Shape({bytes / 4}), DType::kF32, arena);
  Tensor dst = Tensor::View(Shape({bytes / 4}), DType::kF32, arena + Aligned(bytes));
  device.Zero(src);
  const double seconds = SecondsPerCall(device, [&] { device.Copy(src, dst); });
  return 2.0 * static_cast<double>(src.nbytes()) / seconds;
}

}  // namespace twinflow::runtime
