// Autograd (gradients through the interpreter against finite differences), the optimizers
// (parsing, and updates applied by the interpreter) and the composed causal attention.
#include "engine/graph/autograd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/graph/optimizer.h"
#include "engine/interpreter/reference_interpreter.h"
#include "engine/ops/attention.h"
#include "tests/support/op_test_helpers.h"

namespace twinflow::graph {
namespace {

using testing::BuiltinRegistry;
using testing::CpuRegistry;

sbp::Placement Cpu0() { return sbp::Placement(DeviceType::kCpu, {0}); }

Tensor RandomTensor(Shape shape, uint64_t seed) {
  Rng rng(seed);
  return Tensor::Random(std::move(shape), DType::kF32, rng);
}

Attrs Normal(int64_t seed) {
  return Attrs{{"init", std::string("normal")}, {"std", 0.5}, {"seed", seed}};
}

// loss = reduce_sum(tanh(x w) * (x w)): x w feeds two consumers, so its gradient is a sum.
struct Model {
  GraphBuilder builder{BuiltinRegistry(), Cpu0()};
  TensorId x, w, loss;
  Model() {
    x = builder.Input("x", Shape{2, 3});
    w = builder.Variable("w", Shape{3, 4}, DType::kF32, Normal(5));
    const TensorId h = builder.Add1("matmul", {x, w}, {}, "h");
    const TensorId t = builder.Add1("tanh", {h}, {}, "t");
    const TensorId p = builder.Add1("mul", {t, h}, {}, "p");
    loss = builder.Add1("reduce_sum", {p}, {}, "loss");
  }
};

double Loss(const LogicalGraph& graph, TensorId loss, const Tensor& x, const Tensor& w) {
  interpreter::ReferenceInterpreter run(graph, CpuRegistry());
  run.set_variable("w", w);
  return run.Step({{"x", x}}, {loss}).at(loss).GetDouble(0);
}

TEST(Autograd, GradientsMatchFiniteDifferences) {
  Model m;
  const auto grads = AddBackward(m.builder, m.loss, {m.w, m.x});
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(m.builder.meta(grads.at(m.w)), m.builder.meta(m.w));
  EXPECT_EQ(m.builder.meta(grads.at(m.x)), m.builder.meta(m.x));
  m.builder.graph().Validate(BuiltinRegistry());

  const Tensor x = RandomTensor(Shape{2, 3}, 1);
  interpreter::ReferenceInterpreter run(m.builder.graph(), CpuRegistry());
  const Tensor w = run.variable("w");
  const auto got = run.Step({{"x", x}}, {grads.at(m.w), grads.at(m.x)});
  const double eps = 1e-2;
  for (int64_t i = 0; i < w.numel(); ++i) {
    Tensor up = w, down = w;
    up.SetDouble(i, w.GetDouble(i) + eps);
    down.SetDouble(i, w.GetDouble(i) - eps);
    const double fd =
        (Loss(m.builder.graph(), m.loss, x, up) - Loss(m.builder.graph(), m.loss, x, down)) /
        (2 * eps);
    EXPECT_NEAR(got.at(grads.at(m.w)).GetDouble(i), fd, 2e-3 * (1 + std::fabs(fd))) << "w " << i;
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    Tensor up = x, down = x;
    up.SetDouble(i, x.GetDouble(i) + eps);
    down.SetDouble(i, x.GetDouble(i) - eps);
    const double fd =
        (Loss(m.builder.graph(), m.loss, up, w) - Loss(m.builder.graph(), m.loss, down, w)) /
        (2 * eps);
    EXPECT_NEAR(got.at(grads.at(m.x)).GetDouble(i), fd, 2e-3 * (1 + std::fabs(fd))) << "x " << i;
  }
}

TEST(Autograd, UnreachedTensorsGetZeros) {
  Model m;
  const TensorId unused = m.builder.Variable("unused", Shape{5}, DType::kF32, Normal(1));
  const auto grads = AddBackward(m.builder, m.loss, {unused});
  const OpNode& op = m.builder.graph().op(m.builder.graph().tensor(grads.at(unused)).producer);
  EXPECT_EQ(op.type, "zeros_like");
}

// Recomputing the ops between x and the loss gives bit-identical gradients; the gradient ops
// read the recomputed tensors ("h/recompute"), reached through a gate on the loss's gradient.
TEST(Autograd, RecomputedSegmentGivesTheSameGradients) {
  Model plain, again;
  const auto want = AddBackward(plain.builder, plain.loss, {plain.w, plain.x});
  std::vector<OpId> segment;
  for (const char* name : {"h", "t", "p"}) segment.push_back(*again.builder.graph().FindOp(name));
  const auto got = AddBackward(again.builder, again.loss, {again.w, again.x}, {segment});
  const LogicalGraph& g = again.builder.graph();
  g.Validate(BuiltinRegistry());
  ASSERT_TRUE(g.FindOp("h/recompute").has_value());
  EXPECT_TRUE(g.FindOp("t/recompute").has_value());  // mul's gradient reads t
  EXPECT_FALSE(g.FindOp("p/recompute").has_value()) << "nothing reads p in the backward pass";
  const OpNode& h = g.op(*g.FindOp("h/recompute"));
  EXPECT_EQ(g.op(g.tensor(h.inputs[0]).producer).type, "recompute_gate");
  for (OpId reader : g.Consumers(g.op(*g.FindOp("t")).outputs[0])) {
    EXPECT_FALSE(g.IsBackward(reader)) << g.op(reader).name << " reads the forward t";
  }
  const Tensor x = RandomTensor(Shape{2, 3}, 1);
  interpreter::ReferenceInterpreter a(plain.builder.graph(), CpuRegistry());
  interpreter::ReferenceInterpreter b(g, CpuRegistry());
  const auto ga = a.Step({{"x", x}}, {want.at(plain.w), want.at(plain.x)});
  const auto gb = b.Step({{"x", x}}, {got.at(again.w), got.at(again.x)});
  for (const auto& [mine, theirs] : {std::pair{got.at(again.w), want.at(plain.w)},
                                     std::pair{got.at(again.x), want.at(plain.x)}}) {
    const Tensor& u = gb.at(mine);
    const Tensor& v = ga.at(theirs);
    for (int64_t i = 0; i < v.numel(); ++i) EXPECT_EQ(u.GetDouble(i), v.GetDouble(i));
  }
}

TEST(Autograd, RecomputeSegmentsAreChecked) {
  auto message = [](auto&& call) {
    try {
      call();
    } catch (const InvalidArgumentError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Model m;
  const OpId h = *m.builder.graph().FindOp("h");
  const OpId w = m.builder.graph().tensor(m.w).producer;
  EXPECT_NE(message([&] { AddBackward(m.builder, m.loss, {m.w}, {{w}}); }).find("'w'"),
            std::string::npos);
  EXPECT_NE(message([&] {
              AddBackward(m.builder, m.loss, {m.w}, {{h}, {h}});
            }).find("'h'"),
            std::string::npos);
  EXPECT_NE(message([&] { AddBackward(m.builder, m.loss, {m.w}, {{12345}}); }).find("12345"),
            std::string::npos);
}

// The zero-bubble split: a two-layer MLP's weight gradients (x^T dy, h^T dy) and nothing else
// are marked weight_gradient, and no activation gradient reads a marked op's result.
TEST(Autograd, MarksWhatOnlyWeightGradientsNeed) {
  GraphBuilder builder(BuiltinRegistry(), Cpu0());
  const TensorId x = builder.Input("x", Shape{2, 3});
  const TensorId w1 = builder.Variable("w1", Shape{3, 4}, DType::kF32, Normal(1));
  const TensorId w2 = builder.Variable("w2", Shape{4, 2}, DType::kF32, Normal(2));
  const TensorId h = builder.Add1("tanh", {builder.Add1("matmul", {x, w1}, {}, "fc1")}, {}, "act");
  const TensorId y = builder.Add1("matmul", {h, w2}, {}, "fc2");
  const TensorId loss =
      builder.Add1("reduce_sum", {y}, Attrs{{"axes", std::vector<int64_t>{0, 1}}});
  const std::map<TensorId, TensorId> grads = AddBackward(builder, loss, {w1, w2});
  const LogicalGraph& graph = builder.graph();
  for (TensorId w : {w1, w2}) {
    EXPECT_TRUE(graph.op(graph.tensor(grads.at(w)).producer).weight_gradient)
        << graph.tensor(w).name;
  }
  int weight = 0, input = 0;
  for (const OpNode& op : graph.ops()) {
    if (!graph.IsBackward(op.id)) {
      EXPECT_FALSE(op.weight_gradient) << op.name;
      continue;
    }
    (op.weight_gradient ? weight : input) += 1;
    if (op.weight_gradient) continue;
    for (TensorId t : op.inputs) {  // an input-gradient op reads nothing of the weight pass
      const OpId producer = graph.tensor(t).producer;
      EXPECT_FALSE(graph.op(producer).weight_gradient) << op.name << " reads " << t;
    }
  }
  EXPECT_GT(weight, 0);
  EXPECT_GT(input, 0) << "dy of fc2 and the tanh's gradient feed fc1's weight gradient";
}

TEST(Autograd, ErrorsNameTheProblem) {
  GraphBuilder b(BuiltinRegistry(), Cpu0());
  const TensorId w = b.Variable("w", Shape{3}, DType::kF32, Normal(1));
  const TensorId stepped = b.Add1("sgd_update", {w, w}, {{"lr", 0.1}}, "upd");
  const TensorId loss = b.Add1("reduce_sum", {stepped}, {}, "loss");
  try {
    AddBackward(b, loss, {w});
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("'upd'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(AddBackward(b, stepped, {w}), InvalidArgumentError);  // not a scalar
}

TEST(Optimizer, ParsesAndNamesBadFields) {
  const OptimizerConfig sgd = ParseOptimizer("sgd:lr=0.1,momentum=0.9");
  EXPECT_EQ(sgd.kind, OptimizerConfig::Kind::kSgd);
  EXPECT_DOUBLE_EQ(sgd.learning_rate, 0.1);
  EXPECT_DOUBLE_EQ(sgd.momentum, 0.9);
  EXPECT_EQ(ParseOptimizer("sgd").kind, OptimizerConfig::Kind::kSgd);
  const OptimizerConfig adamw = ParseOptimizer("adamw:lr=1e-3,weight_decay=0.01");
  EXPECT_EQ(adamw.kind, OptimizerConfig::Kind::kAdamW);
  EXPECT_DOUBLE_EQ(adamw.learning_rate, 1e-3);
  EXPECT_DOUBLE_EQ(adamw.weight_decay, 0.01);
  EXPECT_EQ(ParseOptimizer("adam:lr=1e-3").kind, OptimizerConfig::Kind::kAdam);
  for (const auto& [text, field] :
       std::vector<std::pair<std::string, std::string>>{{"rmsprop", "rmsprop"},
                                                        {"sgd:lr=abc", "lr"},
                                                        {"sgd:lr=-1", "lr"},
                                                        {"sgd:beta1=0.9", "beta1"},
                                                        {"adam:momentum=0.9", "momentum"},
                                                        {"adam:beta2=1.5", "beta2"},
                                                        {"sgd:lr", "lr"},
                                                        {"sgd:lr=0.1,lr=0.2", "lr"},
                                                        {"sgd:lr=0.1,", "''"},
                                                        {"adamw:schedule=step", "'step'"},
                                                        {"adamw:schedule=cosine", "decay_steps"},
                                                        {"adamw:warmup=1.5", "warmup"},
                                                        {"adamw:lr=1,min_lr=2", "min_lr"}}) {
    try {
      ParseOptimizer(text);
      ADD_FAILURE() << text << " parsed";
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

TEST(Optimizer, SchedulesParseAndPrintBack) {
  const OptimizerConfig plain = ParseOptimizer("adamw");
  EXPECT_FALSE(plain.schedule.has_value());
  const OptimizerConfig c =
      ParseOptimizer("adamw:lr=3e-4,schedule=cosine,warmup=10,decay_steps=100,min_lr=3e-5");
  ASSERT_TRUE(c.schedule.has_value());
  EXPECT_EQ(c.schedule->decay, LrDecay::kCosine);
  EXPECT_EQ(c.schedule->warmup, 10);
  EXPECT_EQ(c.schedule->decay_steps, 100);
  EXPECT_DOUBLE_EQ(c.schedule->min_lr, 3e-5);
  EXPECT_EQ(OptimizerText(ParseOptimizer(OptimizerText(c))), OptimizerText(c));
  EXPECT_NE(OptimizerText(c).find("schedule=cosine,warmup=10,decay_steps=100,min_lr=3e-05"),
            std::string::npos)
      << OptimizerText(c);
  // A warmup alone is a schedule that stays constant after it.
  EXPECT_EQ(ParseOptimizer("sgd:warmup=5").schedule->decay, LrDecay::kConstant);
}

// Megatron's shapes: linear warmup from 0, then constant, linear or cosine to min_lr.
TEST(Optimizer, ScheduledLearningRateFollowsTheFormulas) {
  const double base = 1.0, min = 0.1;
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(base, 0, LrDecay::kCosine, 4, 14, min), 0.0);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(base, 2, LrDecay::kCosine, 4, 14, min), 0.5);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(base, 4, LrDecay::kCosine, 4, 14, min), base);
  EXPECT_NEAR(ScheduledLearningRate(base, 9, LrDecay::kCosine, 4, 14, min), (base + min) / 2,
              1e-12);
  EXPECT_NEAR(ScheduledLearningRate(base, 9, LrDecay::kLinear, 4, 14, min), (base + min) / 2,
              1e-12);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(base, 14, LrDecay::kLinear, 4, 14, min), min);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(base, 99, LrDecay::kCosine, 4, 14, min), min);
  EXPECT_DOUBLE_EQ(ScheduledLearningRate(base, 99, LrDecay::kConstant, 4, 0, min), base);
  // The cosine falls slower than the line early on and faster later.
  EXPECT_GT(ScheduledLearningRate(base, 6, LrDecay::kCosine, 4, 14, min),
            ScheduledLearningRate(base, 6, LrDecay::kLinear, 4, 14, min));
}

// The learning rate as a graph tensor changes nothing by itself: a constant schedule gives the
// weights the attr gives, step for step (to the f32 rounding of the rate, which the attr keeps
// in double for Adam); a warmup's first step (rate 0) leaves them as they were.
TEST(Optimizer, AScheduledRateMatchesTheAttrAndWarmsUp) {
  const auto train = [](const std::string& spec, int steps) {
    GraphBuilder b(BuiltinRegistry(), Cpu0());
    const TensorId x = b.Input("x", Shape{2, 3});
    const TensorId w = b.Variable("w", Shape{3, 1}, DType::kF32, Normal(3));
    const TensorId y = b.Add1("matmul", {x, w});
    const TensorId loss = b.Add1("reduce_sum", {b.Add1("mul", {y, y})}, {}, "loss");
    AddOptimizer(b, ParseOptimizer(spec), AddBackward(b, loss, {w}));
    b.graph().Validate(BuiltinRegistry());
    interpreter::ReferenceInterpreter run(b.graph(), CpuRegistry());
    std::vector<Tensor> weights{run.variable("w")};
    for (int s = 0; s < steps; ++s) {
      run.Step({{"x", RandomTensor(Shape{2, 3}, 7 + s)}}, {});
      weights.push_back(run.variable("w"));
    }
    return weights;
  };
  for (const std::string kind : {"sgd:lr=0.1,momentum=0.9", "adamw:lr=0.01"}) {
    const std::vector<Tensor> plain = train(kind, 3);
    const std::vector<Tensor> constant = train(kind + ",schedule=constant", 3);
    for (size_t s = 0; s < plain.size(); ++s) {
      EXPECT_LE(CloseRatio(plain[s], constant[s], 1e-6, 1e-7), 1.0) << kind << " step " << s;
    }
    const std::vector<Tensor> warm = train(kind + ",warmup=2", 2);
    EXPECT_TRUE(BitEqual(warm[1], warm[0])) << kind << ": rate 0 on the first step";
    EXPECT_FALSE(BitEqual(warm[2], warm[1])) << kind << ": rate lr/2 on the second";
  }
}

// One SGD step through the interpreter: w' = w - lr * dloss/dw, dloss/dw = x^T 1.
TEST(Optimizer, SgdStepUpdatesTheVariable) {
  GraphBuilder b(BuiltinRegistry(), Cpu0());
  const TensorId x = b.Input("x", Shape{2, 3});
  const TensorId w = b.Variable("w", Shape{3, 1}, DType::kF32, Normal(3));
  const TensorId loss = b.Add1("reduce_sum", {b.Add1("matmul", {x, w})}, {}, "loss");
  AddOptimizer(b, ParseOptimizer("sgd:lr=0.5"), AddBackward(b, loss, {w}));
  b.graph().Validate(BuiltinRegistry());
  interpreter::ReferenceInterpreter run(b.graph(), CpuRegistry());
  const Tensor before = run.variable("w");
  const Tensor xv = RandomTensor(Shape{2, 3}, 2);
  run.Step({{"x", xv}}, {});
  for (int64_t k = 0; k < 3; ++k) {
    const double grad = xv.GetDouble(k) + xv.GetDouble(3 + k);
    EXPECT_NEAR(run.variable("w").GetDouble(k), before.GetDouble(k) - 0.5 * grad, 1e-5);
  }
}

TEST(Optimizer, MomentumAndAdamKeepState) {
  for (const std::string spec : {"sgd:lr=0.1,momentum=0.9", "adamw:lr=0.01"}) {
    GraphBuilder b(BuiltinRegistry(), Cpu0());
    const TensorId w = b.Variable("w", Shape{2}, DType::kF32, Normal(4));
    const TensorId loss = b.Add1("reduce_sum", {b.Add1("mul", {w, w})}, {}, "loss");
    AddOptimizer(b, ParseOptimizer(spec), AddBackward(b, loss, {w}));
    b.graph().Validate(BuiltinRegistry());
    interpreter::ReferenceInterpreter run(b.graph(), CpuRegistry());
    const double w0 = run.variable("w").GetDouble(0);
    run.Step({}, {});
    const double w1 = run.variable("w").GetDouble(0);
    run.Step({}, {});
    const double w2 = run.variable("w").GetDouble(0);
    if (spec[0] == 's') {
      // buf1 = 2 w0, w1 = w0 - 0.1 buf1; buf2 = 0.9 buf1 + 2 w1, w2 = w1 - 0.1 buf2.
      EXPECT_NEAR(w1, w0 - 0.2 * w0, 1e-5);
      EXPECT_NEAR(run.variable("w/momentum").GetDouble(0), 0.9 * 2 * w0 + 2 * w1, 1e-5);
      EXPECT_NEAR(w2, w1 - 0.1 * (0.9 * 2 * w0 + 2 * w1), 1e-5);
    } else {
      EXPECT_EQ(run.variable("w/adam_step").GetDouble(0), 2.0);
      EXPECT_NEAR(w1, w0 - 0.01 * (w0 > 0 ? 1 : -1) - 0.01 * 0.01 * w0, 1e-5);
      EXPECT_LT(std::fabs(w2), std::fabs(w1));
    }
  }
}

TEST(Attention, IsCausalAndDifferentiable) {
  GraphBuilder b(BuiltinRegistry(), Cpu0());
  const TensorId q = b.Input("q", Shape{2, 4, 6});
  const TensorId k = b.Input("k", Shape{2, 4, 6});
  const TensorId v = b.Input("v", Shape{2, 4, 6});
  const TensorId out = ops::CausalSelfAttention(b, q, k, v, 2, "attn");
  EXPECT_EQ(b.meta(out), b.meta(q));
  EXPECT_THROW(ops::CausalSelfAttention(b, q, k, v, 4, "bad"), ShapeError);
  const TensorId loss = b.Add1("reduce_sum", {out}, {}, "loss");
  const auto grads = AddBackward(b, loss, {q, k, v});
  b.graph().Validate(BuiltinRegistry());

  std::map<std::string, Tensor> feeds{{"q", RandomTensor(Shape{2, 4, 6}, 1)},
                                      {"k", RandomTensor(Shape{2, 4, 6}, 2)},
                                      {"v", RandomTensor(Shape{2, 4, 6}, 3)}};
  interpreter::ReferenceInterpreter run(b.graph(), CpuRegistry());
  const Tensor y = run.Step(feeds, {out}).at(out);
  // Position 0 attends to itself only: its output is v at position 0.
  for (int64_t c = 0; c < 6; ++c) {
    EXPECT_NEAR(y.GetDouble(c), feeds["v"].GetDouble(c), 1e-5);
  }
  // Changing the last position's key and value leaves the earlier outputs alone.
  std::map<std::string, Tensor> changed = feeds;
  for (int64_t c = 0; c < 6; ++c) {
    changed["k"].SetDouble(3 * 6 + c, 5.0);
    changed["v"].SetDouble(3 * 6 + c, -5.0);
  }
  const Tensor y2 = run.Step(changed, {out}).at(out);
  for (int64_t i = 0; i < 3 * 6; ++i) EXPECT_NEAR(y2.GetDouble(i), y.GetDouble(i), 1e-6);
  const auto dv = run.Step(feeds, {grads.at(v)}).at(grads.at(v));
  EXPECT_EQ(dv.shape(), Shape({2, 4, 6}));
  // Every query's weights sum to 1, so d(sum y)/dv summed over positions is seq per batch.
  double total = 0;
  for (int64_t i = 0; i < 4 * 6; ++i) total += dv.GetDouble(i);
  EXPECT_NEAR(total, 4 * 6, 1e-4);
}

}  // namespace
}  // namespace twinflow::graph
