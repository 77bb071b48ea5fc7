// Random instances of embedding and embedding_grad (vocabulary and hidden extents 1..7, ids of
// rank 0..2, i32 or i64, drawn in [0, vocabulary)) and of rotary (1..3 heads of width 2..6, a
// theta small enough that every pair turns visibly, either direction).
#include "tests/support/case_helpers.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

struct EmbeddingDraw {
  int64_t vocabulary = 1;
  int64_t hidden = 1;
  Shape ids;
  DType id_type = DType::kI32;
};

EmbeddingDraw DrawEmbedding(Rng& rng) {
  EmbeddingDraw d;
  d.vocabulary = rng.UniformInt(1, 7);
  d.hidden = rng.UniformInt(1, 7);
  d.ids = RandomShape(rng, static_cast<int>(rng.UniformInt(0, 2)));
  d.id_type = RandomIndexType(rng);
  return d;
}

OpInstance DrawRotary(Rng& rng) {
  const int64_t head_dim = 2 * rng.UniformInt(1, 3);
  const Shape x{rng.UniformInt(1, 3), rng.UniformInt(1, 5), head_dim * rng.UniformInt(1, 3)};
  const double thetas[] = {3.0, 1e4};
  return OpInstance{"rotary",
                    Attrs{{"head_dim", head_dim},
                          {"theta", thetas[rng.UniformInt(0, 1)]},
                          {"inverse", rng.UniformInt(0, 1) == 1}},
                    {{x, DType::kF32}}};
}

}  // namespace

std::vector<OpCase> EmbeddingCases() {
  return {
      {"embedding",
       [](Rng& rng) {
         const EmbeddingDraw d = DrawEmbedding(rng);
         return OpInstance{"embedding",
                           {},
                           {{Shape{d.vocabulary, d.hidden}, DType::kF32}, {d.ids, d.id_type}},
                           {{}, IndexFill(d.ids, d.id_type, d.vocabulary)},
                           {1}};
       }},
      {"embedding_grad",
       [](Rng& rng) {
         const EmbeddingDraw d = DrawEmbedding(rng);
         return OpInstance{"embedding_grad",
                           Attrs{{"num_embeddings", d.vocabulary}},
                           {{WithLast(d.ids, d.hidden), DType::kF32}, {d.ids, d.id_type}},
                           {{}, IndexFill(d.ids, d.id_type, d.vocabulary)},
                           {1}};
       },
       /*check_gradient=*/false},
      {"rotary", DrawRotary},
  };
}

}  // namespace twinflow::testing
