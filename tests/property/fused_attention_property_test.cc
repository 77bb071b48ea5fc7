// fused_attention against the unfused graph (ops::CausalSelfAttention: reshape, transpose,
// batch_matmul, scale, causal_mask, softmax): on random shapes, including one-token sequences
// and one-column heads, with as many key-value heads as query heads or fewer (grouped-query:
// the unfused graph stacks each group's queries, the kernel indexes the shared head), the
// outputs and the gradients of q, k and v agree, and reruns of the fused kernels are
// bit-identical.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "engine/graph/autograd.h"
#include "engine/interpreter/reference_interpreter.h"
#include "engine/ops/attention.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow::testing {
namespace {

// out = attention(q, k, v); loss = sum(out * w); the gradients of q, k and v.
struct AttentionProbe {
  graph::LogicalGraph graph;
  graph::TensorId out = -1;
  std::vector<graph::TensorId> grads;
};

AttentionProbe BuildProbe(const Shape& shape, const Shape& kv_shape, int64_t heads,
                          int64_t kv_heads, bool fused) {
  graph::GraphBuilder b(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
  const graph::TensorId q = b.Input("q", shape, DType::kF32);
  const graph::TensorId k = b.Input("k", kv_shape, DType::kF32);
  const graph::TensorId v = b.Input("v", kv_shape, DType::kF32);
  const graph::TensorId w = b.Input("w", shape, DType::kF32);
  AttentionProbe probe;
  probe.out = ops::CausalSelfAttention(
      b, q, k, v, heads, "attention",
      fused ? ops::AttentionKind::kFused : ops::AttentionKind::kUnfused, kv_heads);
  const graph::TensorId loss =
      b.Add1("reduce_sum", {b.Add1("mul", {probe.out, w})}, Attrs{{"keepdims", false}});
  const auto grads = graph::AddBackward(b, loss, {q, k, v});
  for (graph::TensorId input : {q, k, v}) probe.grads.push_back(grads.at(input));
  probe.graph = b.graph();
  return probe;
}

std::vector<Tensor> RunProbe(const AttentionProbe& probe,
                             const std::map<std::string, Tensor>& feeds) {
  interpreter::ReferenceInterpreter interp(probe.graph, CpuRegistry());
  std::vector<graph::TensorId> fetch = probe.grads;
  fetch.push_back(probe.out);
  auto values = interp.Step(feeds, fetch);
  std::vector<Tensor> result;
  for (graph::TensorId id : fetch) result.push_back(values.at(id));
  return result;
}

TEST(FusedAttention, MatchesTheUnfusedGraphForwardAndBackward) {
  const bool ok = rc::check("fused attention equals the unfused graph", [] {
    const int64_t heads = *rc::gen::inRange<int64_t>(1, 7);
    const int64_t head_dim = *rc::gen::inRange<int64_t>(1, 9);
    int64_t kv_heads = *rc::gen::inRange<int64_t>(1, heads + 1);
    while (heads % kv_heads != 0) ++kv_heads;
    const Shape shape{*rc::gen::inRange<int64_t>(1, 4), *rc::gen::inRange<int64_t>(1, 17),
                      heads * head_dim};
    const Shape kv_shape{shape[0], shape[1], kv_heads * head_dim};
    Rng rng(*rc::gen::arbitrary<uint32_t>());
    std::map<std::string, Tensor> feeds;
    for (const char* name : {"q", "k", "v", "w"}) {
      const bool kv = name[0] == 'k' || name[0] == 'v';
      feeds[name] = Tensor::Random(kv ? kv_shape : shape, DType::kF32, rng);
    }
    const auto probe = [&](bool fused) {
      return BuildProbe(shape, kv_shape, heads, kv_heads, fused);
    };
    const std::vector<Tensor> fused = RunProbe(probe(true), feeds);
    const std::vector<Tensor> unfused = RunProbe(probe(false), feeds);
    const char* what[] = {"dq", "dk", "dv", "out"};
    for (size_t i = 0; i < fused.size(); ++i) {
      RC_LOG() << what[i] << " on " << shape.ToString() << " with " << kv_heads
               << " key-value heads\n";
      // f32 sums of up to 16 terms in two orders: agreement to 1e-5 relative, 1e-6 absolute.
      RC_ASSERT(CloseRatio(fused[i], unfused[i], 1e-5, 1e-6) <= 1.0);
    }
    RC_ASSERT(BitEqual(RunProbe(probe(true), feeds)[0], fused[0]));
  });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace twinflow::testing
