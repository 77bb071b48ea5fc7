#pragma once
// Argument checks of embedding, embedding_grad and rotary, shared by the CPU kernels and the CUDA
// host side so both devices accept the same tensors and throw the same errors. Id values are
// checked where the ids are read (on the CPU per id, on CUDA on the device).
#include <cstdint>

#include "kernels/kernel.h"

namespace twinflow::kernels {

// The physical weight (dweight) table: `rows` rows of `width` values.
struct EmbeddingTable {
  int64_t rows = 0;
  int64_t width = 0;
};

// embedding(weight [rows, width], ids [n...]) -> [n..., width].
EmbeddingTable CheckEmbedding(const KernelContext& ctx);
// embedding_grad(dy [n..., width], ids [n...]) -> dweight [rows, width].
EmbeddingTable CheckEmbeddingGrad(const KernelContext& ctx);

// rotary(x [batch, seq, width]) -> x's shape: what the kernel rotates, and where.
struct RotaryView {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t width = 0;           // of the physical x: whole heads
  int64_t head_dim = 0;        // even
  int64_t first_position = 0;  // of the physical x's first token in the logical sequence
  double theta = 1e4;
  bool inverse = false;  // rotate by minus the angle
};
RotaryView CheckRotary(const KernelContext& ctx);

}  // namespace twinflow::kernels
