// GraphBuilder's autocast (engine/graph/autocast.cc) on the real op library: what is cast,
// where, and how often; and how the models use it (strategy precision=bf16).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "engine/graph/graph_builder.h"
#include "engine/ops/builtin_ops.h"
#include "engine/ops/softmax_ops.h"
#include "engine/parallel/strategy.h"
#include "models/model.h"

namespace twinflow::graph {
namespace {

const OpRegistry& Ops() {
  static const OpRegistry registry = ops::BuiltinOps();
  return registry;
}

std::map<std::string, int> CountTypes(const LogicalGraph& graph) {
  std::map<std::string, int> count;
  for (const OpNode& op : graph.ops()) ++count[op.type];
  return count;
}

TEST(Autocast, WeightsAreCastOnceAndTheLossStaysFp32) {
  GraphBuilder b(Ops(), sbp::Placement(DeviceType::kCpu, {0}));
  b.SetAutocast(DType::kBF16);
  const TensorId x = b.Input("x", Shape{4, 8});
  const TensorId labels = b.Input("labels", Shape{4}, DType::kI32);
  const TensorId w = b.Variable("w", Shape{8, 8}, DType::kF32, Attrs{{"init", "zeros"}});
  const TensorId h = b.Add1("relu", {b.Add1("matmul", {x, w})});
  const TensorId y = b.Add1("matmul", {h, w});  // the same weight again: its cast is reused
  EXPECT_EQ(b.meta(h).dtype, DType::kBF16);
  EXPECT_EQ(b.meta(y).dtype, DType::kBF16);
  const TensorId losses = ops::SparseSoftmaxCrossEntropy(b, y, labels, false);
  EXPECT_EQ(b.meta(losses).dtype, DType::kF32);
  // An op on fp32 values that reads no weight and no bf16 tensor is left alone.
  const TensorId mean = b.Add1("reduce_mean", {losses}, Attrs{{"axes", std::vector<int64_t>{0}}});
  EXPECT_EQ(b.meta(mean).dtype, DType::kF32);
  // x and w cast down once each; the logits cast up once for the loss.
  EXPECT_EQ(CountTypes(b.graph())["cast"], 3);
  EXPECT_EQ(b.meta(w).dtype, DType::kF32) << "the master weight stays fp32";
  EXPECT_TRUE(b.graph().FindOp("w/bf16").has_value());
}

TEST(Autocast, ACastKeepsItsSourcesPinAndTheBackwardCastSumsWide) {
  GraphBuilder b(Ops(), sbp::Placement(DeviceType::kCpu, {0, 1}));
  const TensorId w = b.Variable("w", Shape{8, 8}, DType::kF32, Attrs{{"init", "zeros"}});
  b.Pin(w, sbp::NdSbp({sbp::Sbp::Split(1)}), {}, true);
  b.SetAutocast(DType::kBF16);
  const TensorId x = b.Input("x", Shape{4, 8});
  b.Add1("matmul", {x, w});
  const TensorId cast = b.graph().op(*b.graph().FindOp("w/bf16")).outputs[0];
  ASSERT_TRUE(b.graph().tensor(cast).pin.has_value());
  EXPECT_EQ(*b.graph().tensor(cast).pin, *b.graph().tensor(w).pin);
  // The gradient of a narrowing cast widens, and may keep partial sums (summed in fp32).
  b.SetAutocast(std::nullopt);
  const TensorId dy = b.Input("dy", Shape{8, 8}, DType::kBF16);
  const OpNode& forward = b.graph().op(*b.graph().FindOp("w/bf16"));
  const auto grads = Ops().Find("cast").gradient(b, forward, {dy});
  ASSERT_TRUE(grads[0].has_value());
  const OpNode& backward = b.graph().op(b.graph().tensor(*grads[0]).producer);
  EXPECT_EQ(b.meta(*grads[0]).dtype, DType::kF32);
  EXPECT_TRUE(backward.attrs.GetBool("sum_wide", false));
}

// A bf16 GPT: every float activation of the forward pass is bf16 but the loss's; the weights,
// their gradients at the optimizer and the optimizer state are fp32.
TEST(Autocast, Bf16GptComputesInBf16AroundFp32MasterWeights) {
  models::GptConfig config;
  config.layers = 1, config.hidden = 16, config.heads = 2, config.sequence = 8;
  config.vocab = 16, config.batch = 4;
  models::BuildOptions options;
  options.strategy = parallel::ParseStrategy("dp=1,precision=bf16");
  options.training = true;
  const models::BuiltModel model = models::BuildGpt(Ops(), config, options);
  const LogicalGraph& g = model.graph;
  int low = 0;
  for (const OpNode& op : g.ops()) {
    const OpRole role = Ops().Find(op.type).role;
    for (TensorId t : op.outputs) {
      const DType dtype = g.tensor(t).meta.dtype;
      if (role == OpRole::kVariable || role == OpRole::kOptimizerUpdate) {
        EXPECT_NE(dtype, DType::kBF16) << op.name;
      }
      low += dtype == DType::kBF16;
    }
    if (role == OpRole::kOptimizerUpdate) {
      for (TensorId t : op.inputs) EXPECT_NE(g.tensor(t).meta.dtype, DType::kBF16) << op.name;
    }
  }
  EXPECT_GT(low, 40);
  EXPECT_EQ(g.tensor(model.loss).meta.dtype, DType::kF32);
}

}  // namespace
}  // namespace twinflow::graph
