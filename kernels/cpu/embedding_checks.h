#pragma once
// Argument checks of embedding and embedding_grad, shared by the CPU kernels and the CUDA host
// side so both devices accept the same tensors and throw the same errors. Id values are
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

}  // namespace twinflow::kernels
