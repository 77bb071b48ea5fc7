// Random matmul and batch_matmul instances: extents 1..7, random transposes, batch ranks 1..2.
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

// The stored shape of an operand whose logical matrix is rows x cols.
std::vector<int64_t> Stored(std::vector<int64_t> batch, int64_t rows, int64_t cols, bool t) {
  batch.push_back(t ? cols : rows);
  batch.push_back(t ? rows : cols);
  return batch;
}

OpInstance DrawMatmul(Rng& rng, bool batched) {
  const int64_t m = rng.UniformInt(1, 7), k = rng.UniformInt(1, 7), n = rng.UniformInt(1, 7);
  const bool ta = rng.UniformInt(0, 1) == 1;
  const bool tb = rng.UniformInt(0, 1) == 1;
  std::vector<int64_t> batch;
  if (batched) {
    const int batch_rank = static_cast<int>(rng.UniformInt(1, 2));
    for (int i = 0; i < batch_rank; ++i) batch.push_back(rng.UniformInt(1, 5));
  }
  const DType dtype = rng.UniformInt(0, 4) == 0 ? DType::kF64 : DType::kF32;
  OpInstance instance;
  instance.type = batched ? "batch_matmul" : "matmul";
  instance.attrs = Attrs{{"transpose_a", ta}, {"transpose_b", tb}};
  instance.inputs = {{Shape(Stored(batch, m, k, ta)), dtype},
                     {Shape(Stored(batch, k, n, tb)), dtype}};
  return instance;
}

}  // namespace

std::vector<OpCase> MatmulCases() {
  return {
      {"matmul", [](Rng& rng) { return DrawMatmul(rng, false); }},
      {"batch_matmul", [](Rng& rng) { return DrawMatmul(rng, true); }},
  };
}

}  // namespace twinflow::testing
