// fused_attention against the unfused graph (ops::CausalSelfAttention: reshape, transpose,
// batch_matmul, scale, causal_mask, softmax): on random shapes, including one-token sequences
// and one-column heads, the outputs and the gradients of q, k and v agree, and reruns of the
// fused kernels are bit-identical.
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

AttentionProbe BuildProbe(const Shape& shape, int64_t heads, bool fused) {
  graph::GraphBuilder b(BuiltinRegistry(), sbp::Placement(DeviceType::kCpu, {0}));
  const graph::TensorId q = b.Input("q", shape, DType::kF32);
  const graph::TensorId k = b.Input("k", shape, DType::kF32);
  const graph::TensorId v = b.Input("v", shape, DType::kF32);
  const graph::TensorId w = b.Input("w", shape, DType::kF32);
  AttentionProbe probe;
  probe.out = fused ? b.Add("fused_attention", {q, k, v}, Attrs{{"heads", heads}})[0]
                    : ops::CausalSelfAttention(b, q, k, v, heads);
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
    const int64_t heads = *rc::gen::inRange<int64_t>(1, 5);
    const int64_t head_dim = *rc::gen::inRange<int64_t>(1, 9);
    const Shape shape{*rc::gen::inRange<int64_t>(1, 4), *rc::gen::inRange<int64_t>(1, 17),
                      heads * head_dim};
    Rng rng(*rc::gen::arbitrary<uint32_t>());
    std::map<std::string, Tensor> feeds;
    for (const char* name : {"q", "k", "v", "w"}) {
      feeds[name] = Tensor::Random(shape, DType::kF32, rng);
    }
    const std::vector<Tensor> fused = RunProbe(BuildProbe(shape, heads, true), feeds);
    const std::vector<Tensor> unfused = RunProbe(BuildProbe(shape, heads, false), feeds);
    const char* what[] = {"dq", "dk", "dv", "out"};
    for (size_t i = 0; i < fused.size(); ++i) {
      RC_LOG() << what[i] << " on " << shape.ToString() << "\n";
      // f32 sums of up to 16 terms in two orders: agreement to 1e-5 relative, 1e-6 absolute.
      RC_ASSERT(CloseRatio(fused[i], unfused[i], 1e-5, 1e-6) <= 1.0);
    }
    RC_ASSERT(BitEqual(RunProbe(BuildProbe(shape, heads, true), feeds)[0], fused[0]));
  });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace twinflow::testing
