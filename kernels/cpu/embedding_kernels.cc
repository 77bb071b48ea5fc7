// CPU kernels of embedding, embedding_grad and rotary. The first two read the row range of the
// weight (of dweight) in the logical tensor, so a vocabulary split handles only its own ids; ids
// outside the logical vocabulary are an error on every device.
#include <cmath>
#include <vector>

#include "engine/core/rotary_angle.h"
#include "kernels/cpu/embedding_checks.h"
#include "kernels/cpu/kernel_families.h"
#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
namespace {

template <typename T>
void Embedding(const KernelContext& ctx) {
  const char* op = "embedding";
  const auto [rows, width] = CheckEmbedding(ctx);
  const Tensor& weight = *ctx.inputs[0];
  const Tensor& ids = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  const int64_t vocabulary = LogicalInputShape(ctx, 0)[0];
  const Range range = InputRange(ctx, 0, 0);
  const T* w = weight.data<T>();
  T* o = out.data<T>();
  for (int64_t i = 0, end = ids.numel(); i < end; ++i) {
    const int64_t id = IndexAt(ids, i);
    CheckIndexValue(id, vocabulary, op, "id");
    const int64_t local = id - range.begin;
    const bool mine = id >= range.begin && id < range.end && local < rows;
    for (int64_t j = 0; j < width; ++j) o[i * width + j] = mine ? w[local * width + j] : T(0);
  }
}

template <typename T>
void EmbeddingGrad(const KernelContext& ctx) {
  const char* op = "embedding_grad";
  const auto [rows, width] = CheckEmbeddingGrad(ctx);
  const Tensor& dy = *ctx.inputs[0];
  const Tensor& ids = *ctx.inputs[1];
  Tensor& dweight = *ctx.outputs[0];
  const int64_t vocabulary = ctx.attrs.GetInt("num_embeddings");
  const Range range = OutputRange(ctx, 0, 0);
  dweight.Fill(0);
  const T* g = dy.data<T>();
  T* dw = dweight.data<T>();
  for (int64_t i = 0, end = ids.numel(); i < end;
       ++i) {  // id order: a fixed summation order per row
    const int64_t id = IndexAt(ids, i);
    CheckIndexValue(id, vocabulary, op, "id");
    const int64_t local = id - range.begin;
    if (id < range.begin || id >= range.end || local >= rows) continue;
    for (int64_t j = 0; j < width; ++j) dw[local * width + j] += g[i * width + j];
  }
}

template <typename T>
void Rotary(const KernelContext& ctx) {
  const RotaryView v = CheckRotary(ctx);
  const T* x = ctx.inputs[0]->data<T>();
  T* y = ctx.outputs[0]->data<T>();
  const int64_t half = v.head_dim / 2;
  std::vector<double> cosines(half), sines(half);
  for (int64_t b = 0; b < v.batch; ++b) {
    for (int64_t s = 0; s < v.seq; ++s) {
      for (int64_t i = 0; i < half; ++i) {
        const double angle = rotary::Angle(v.first_position + s, i, v.head_dim, v.theta);
        cosines[i] = std::cos(angle);
        sines[i] = v.inverse ? -std::sin(angle) : std::sin(angle);
      }
      const int64_t row = (b * v.seq + s) * v.width;
      for (int64_t head = row; head < row + v.width; head += v.head_dim) {
        for (int64_t i = 0; i < half; ++i) {
          const double a = x[head + i], c = x[head + i + half];
          y[head + i] = static_cast<T>(a * cosines[i] - c * sines[i]);
          y[head + i + half] = static_cast<T>(c * cosines[i] + a * sines[i]);
        }
      }
    }
  }
}

template <typename T>
void RegisterFor(KernelRegistry& registry, DType dtype) {
  registry.Register({"embedding", DeviceType::kCpu, dtype}, Embedding<T>);
  registry.Register({"embedding_grad", DeviceType::kCpu, dtype}, EmbeddingGrad<T>);
  registry.Register({"rotary", DeviceType::kCpu, dtype}, Rotary<T>);
}

}  // namespace

void RegisterEmbeddingKernels(KernelRegistry& registry) {
  RegisterFor<float>(registry, DType::kF32);
  RegisterFor<double>(registry, DType::kF64);
}

}  // namespace twinflow::kernels
