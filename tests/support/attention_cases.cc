// Random instances of fused_attention and fused_attention_grad: q [batch, seq, hidden] with
// hidden = heads * head_dim, k and v with kv_heads (a divisor of heads: grouped-query attention
// half the time) heads, causal or not. Head counts of 1 to 4 let the SBP rule test split heads
// over 2 and 4 devices, and odd sequence lengths make the query splits uneven.
#include "tests/support/case_helpers.h"
#include "tests/support/op_cases.h"

namespace twinflow::testing {
namespace {

struct AttentionDraw {
  Shape qkv;  // q's
  Shape kv;
  int64_t heads = 1;
  Attrs attrs;
  Shape lse() const { return Shape{qkv[0], heads, qkv[1]}; }
};

AttentionDraw DrawAttention(Rng& rng) {
  AttentionDraw d;
  d.heads = rng.UniformInt(1, 4);
  const int64_t head_dim = rng.UniformInt(1, 3);
  d.qkv = Shape{rng.UniformInt(1, 3), rng.UniformInt(1, 6), d.heads * head_dim};
  d.attrs.Set("heads", d.heads);
  int64_t kv_heads = d.heads;
  if (rng.UniformInt(0, 1) == 1) {
    kv_heads = rng.UniformInt(1, d.heads);
    while (d.heads % kv_heads != 0) --kv_heads;
    d.attrs.Set("kv_heads", kv_heads);
  }
  d.kv = Shape{d.qkv[0], d.qkv[1], kv_heads * head_dim};
  if (rng.UniformInt(0, 2) == 0) d.attrs.Set("causal", false);
  return d;
}

OpCase ForwardCase() {
  return {
      "fused_attention", [](Rng& rng) {
        const AttentionDraw d = DrawAttention(rng);
        OpInstance instance{"fused_attention", d.attrs, {F32(d.qkv), F32(d.kv), F32(d.kv)}, {}, {}};
        instance.f32_outputs = {1};  // lse
        return instance;
      }};
}

// Inputs q, k, v, out, lse, dout and (half the time) dlse. Values need not come from a forward
// run: the rules and kernels hold for any, and lse in [-1, 1) keeps exp(score - lse) finite.
OpCase GradCase() {
  return {"fused_attention_grad",
          [](Rng& rng) {
            const AttentionDraw d = DrawAttention(rng);
            OpInstance instance{"fused_attention_grad", d.attrs, {}, {}, {}};
            instance.inputs = {F32(d.qkv), F32(d.kv), F32(d.kv), F32(d.qkv)};
            instance.inputs.push_back(F32(d.lse()));
            instance.inputs.push_back(F32(d.qkv));
            instance.f32_inputs = {4};  // lse
            if (rng.UniformInt(0, 1) == 1) {
              instance.inputs.push_back(F32(d.lse()));
              instance.f32_inputs.push_back(6);  // dlse
            }
            return instance;
          },
          false};
}

}  // namespace

std::vector<OpCase> AttentionCases() { return {ForwardCase(), GradCase()}; }

}  // namespace twinflow::testing
