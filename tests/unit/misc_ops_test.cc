// The misc op family: variable initialisation (layout-independent), constants, the causal
// mask, dropout, assign, and the optimizer update kernels, checked by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/hash_random.h"
#include "engine/graph/graph_builder.h"
#include "engine/ops/op_families.h"
#include "kernels/cpu/kernel_families.h"
#include "tests/support/op_runner.h"

namespace twinflow::ops {
namespace {

using graph::OpContext;
using graph::TensorMeta;

const graph::OpRegistry& Ops() {
  static const graph::OpRegistry registry = [] {
    graph::OpRegistry r;
    RegisterMiscOps(r);
    RegisterElementwiseOps(r);  // the fused softmax's unfused composition
    RegisterSoftmaxOps(r);
    return r;
  }();
  return registry;
}

const kernels::KernelRegistry& Kernels() {
  static const kernels::KernelRegistry registry = [] {
    kernels::KernelRegistry r;
    kernels::RegisterMiscKernels(r);
    kernels::RegisterElementwiseKernels(r);
    kernels::RegisterSoftmaxKernels(r);
    return r;
  }();
  return registry;
}

TensorMeta F32(Shape shape) { return TensorMeta{std::move(shape), DType::kF32}; }

std::vector<TensorMeta> Infer(const std::string& type, const Attrs& attrs,
                              const std::vector<TensorMeta>& inputs) {
  return Ops().Find(type).infer(OpContext{type, attrs, inputs});
}

Tensor Make(Shape shape, std::vector<double> values) {
  Tensor t(std::move(shape), DType::kF32);
  for (size_t i = 0; i < values.size(); ++i) t.SetDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<Tensor> RunAll(const std::string& type, const Attrs& attrs,
                           const std::vector<Tensor>& inputs) {
  testing::OpInstance instance{type, attrs, {}, {}, {}};
  for (const Tensor& t : inputs) instance.inputs.push_back(TensorMeta{t.shape(), t.dtype()});
  return testing::OpRunner{Ops(), Kernels()}.RunSingle(instance, inputs);
}

Tensor RunOp(const std::string& type, const Attrs& attrs, const std::vector<Tensor>& inputs) {
  return RunAll(type, attrs, inputs).at(0);
}

Attrs VariableAttrs(const std::string& init) {
  return Attrs{{"shape", std::vector<int64_t>{3, 5}},
               {"dtype", std::string("f32")},
               {"init", init},
               {"std", 0.5},
               {"scale", 2.0},
               {"seed", int64_t{7}}};
}

TEST(MiscOps, VariableInitDependsOnLogicalIndexOnly) {
  const Tensor whole = RunOp("variable", VariableAttrs("normal"), {});
  for (int64_t i = 0; i < whole.numel(); ++i) {
    EXPECT_FLOAT_EQ(whole.GetDouble(i), 0.5 * HashNormal(7, static_cast<uint64_t>(i)));
  }
  // The slice [1:3, 2:5] alone fills with the same numbers as that part of the whole.
  Tensor part(Shape{2, 3}, DType::kF32);
  kernels::KernelContext ctx{VariableAttrs("normal"),    {}, {&part},      {},
                             {Region{{{1, 3}, {2, 5}}}}, {}, {Shape{3, 5}}};
  Kernels().Find({"variable", DeviceType::kCpu, DType::kF32})(ctx);
  EXPECT_TRUE(BitEqual(part, whole.Slice(Region{{{1, 3}, {2, 5}}})));
  const Tensor uniform = RunOp("variable", VariableAttrs("uniform"), {});
  for (int64_t i = 0; i < uniform.numel(); ++i) {
    EXPECT_GE(uniform.GetDouble(i), -2.0);
    EXPECT_LT(uniform.GetDouble(i), 2.0);
  }
  EXPECT_EQ(RunOp("variable", VariableAttrs("ones"), {}).GetDouble(14), 1.0);
}

TEST(MiscOps, SourceOpsRejectBadAttrs) {
  EXPECT_THROW(Infer("variable", VariableAttrs("xavier"), {}), InvalidArgumentError);
  EXPECT_THROW(
      Infer("input", {{"shape", std::vector<int64_t>{2}}, {"dtype", std::string("f7")}}, {}),
      InvalidArgumentError);
  EXPECT_THROW(Infer("input", {{"dtype", std::string("f32")}}, {}), InvalidArgumentError);
  EXPECT_EQ(
      Infer("input", {{"shape", std::vector<int64_t>{2, 3}}, {"dtype", std::string("i64")}}, {})[0],
      (TensorMeta{Shape{2, 3}, DType::kI64}));
  EXPECT_TRUE(Ops().Find("variable").is_source());
}

TEST(MiscOps, FillLikeAndCausalMask) {
  EXPECT_EQ(RunOp("fill_like", {{"value", 2.5}}, {Make({2}, {1, 1})}).GetDouble(1), 2.5);
  EXPECT_EQ(RunOp("ones_like", {}, {Make({2}, {7, 7})}).GetDouble(0), 1.0);
  const Tensor mask = RunOp("causal_mask", {}, {Tensor(Shape{2, 3, 3}, DType::kF32)});
  ASSERT_EQ(mask.shape(), Shape({3, 3}));
  EXPECT_EQ(mask.GetDouble(0), 0.0);   // [0,0]
  EXPECT_EQ(mask.GetDouble(1), -1e9);  // [0,1]: a later key
  EXPECT_EQ(mask.GetDouble(3), 0.0);   // [1,0]
  EXPECT_EQ(mask.GetDouble(8), 0.0);   // [2,2]
  EXPECT_THROW(Infer("causal_mask", {}, {F32({2, 3})}), ShapeError);
}

// softmax's fused form is the composition the unfused attention used to build: scale, add
// the causal mask, softmax; its gradient is softmax_grad's times the scale.
TEST(MiscOps, FusedCausalSoftmaxMatchesScaleMaskSoftmax) {
  Rng rng(11);
  const Tensor x = Tensor::Random(Shape{2, 3, 4, 4}, DType::kF32, rng);
  const double scale = 0.35;
  const Tensor scaled = RunOp("scalar_mul", {{"value", scale}}, {x});
  const Tensor masked = RunOp("add", {}, {scaled, RunOp("causal_mask", {}, {scaled})});
  const Tensor unfused = RunOp("softmax", {}, {masked});
  const Attrs fused_attrs{{"axis", int64_t{-1}}, {"scale", scale}, {"causal", true}};
  const Tensor fused = RunOp("softmax", fused_attrs, {x});
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_NEAR(fused.GetDouble(i), unfused.GetDouble(i), 1e-6) << i;
    if (i % 4 > i / 4 % 4) EXPECT_EQ(fused.GetDouble(i), 0.0) << i;  // a later key
  }
  const Tensor dy = Tensor::Random(x.shape(), DType::kF32, rng);
  const Tensor plain = RunOp("softmax_grad", {}, {fused, dy});
  const Tensor scaled_grad = RunOp("softmax_grad", {{"scale", scale}}, {fused, dy});
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_NEAR(scaled_grad.GetDouble(i), scale * plain.GetDouble(i), 1e-6) << i;
  }
  EXPECT_THROW(Infer("softmax", {{"causal", true}}, {F32({2, 3})}), ShapeError);
  EXPECT_THROW(Infer("log_softmax", {{"scale", 2.0}}, {F32({2, 2})}), InvalidArgumentError);
}

TEST(MiscOps, DropoutKeepsAndScalesBySeed) {
  Tensor x(Shape{1000}, DType::kF32);
  x.Fill(1.0);
  const Tensor y = RunOp("dropout", {{"rate", 0.25}, {"seed", int64_t{3}}}, {x});
  int kept = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const bool keep = HashUniform(3, static_cast<uint64_t>(i)) >= 0.25;
    EXPECT_FLOAT_EQ(y.GetDouble(i), keep ? 1.0 / 0.75 : 0.0);
    kept += keep;
  }
  EXPECT_NEAR(kept, 750, 60);
  EXPECT_THROW(Infer("dropout", {{"rate", 1.0}, {"seed", int64_t{0}}}, {F32({2})}),
               InvalidArgumentError);
  // The gradient is the same dropout applied to dy.
  graph::GraphBuilder b(Ops(), sbp::Placement(DeviceType::kCpu, {0}));
  const auto in = b.Input("x", Shape{4}, DType::kF32);
  const auto out = b.Add1("dropout", {in}, {{"rate", 0.5}, {"seed", int64_t{9}}}, "drop");
  const graph::OpNode op = b.graph().op(b.graph().tensor(out).producer);
  const auto dx = Ops().Find("dropout").gradient(b, op, {out});
  const graph::OpNode& grad = b.graph().op(b.graph().tensor(*dx[0]).producer);
  EXPECT_EQ(grad.type, "dropout");
  EXPECT_EQ(grad.attrs.GetInt("seed"), 9);
}

TEST(MiscOps, AssignNeedsMatchingValue) {
  EXPECT_TRUE(Infer("assign", {}, {F32({2, 3}), F32({2, 3})}).empty());
  EXPECT_THROW(Infer("assign", {}, {F32({2, 3}), F32({3, 2})}), ShapeError);
}

TEST(MiscOps, SgdUpdates) {
  const Tensor p = Make({2}, {1, -2}), g = Make({2}, {0.5, 1});
  const Tensor plain = RunOp("sgd_update", {{"lr", 0.1}, {"weight_decay", 0.0}}, {p, g});
  EXPECT_FLOAT_EQ(plain.GetDouble(0), 0.95f);
  EXPECT_FLOAT_EQ(plain.GetDouble(1), -2.1f);
  const auto momentum =
      RunAll("sgd_momentum_update", {{"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.1}},
             {p, g, Make({2}, {1, 0})});
  // buf = 0.9 * buf + g + 0.1 * p; p -= 0.1 * buf
  EXPECT_FLOAT_EQ(momentum[1].GetDouble(0), 0.9f + 0.5f + 0.1f);
  EXPECT_FLOAT_EQ(momentum[0].GetDouble(0), 1.0f - 0.15f);
  EXPECT_FLOAT_EQ(momentum[1].GetDouble(1), 1.0f - 0.2f);
  EXPECT_THROW(Infer("sgd_update", {{"lr", 0.1}}, {F32({2}), F32({3})}), ShapeError);
}

TEST(MiscOps, AdamFirstStepMovesByLearningRate) {
  const Tensor p = Make({2}, {1, -2}), g = Make({2}, {0.5, -3});
  const Tensor zeros(Shape{2}, DType::kF32);
  const Tensor step(Shape{}, DType::kF32);
  const Attrs attrs{{"lr", 0.01},      {"beta1", 0.9},        {"beta2", 0.999},
                    {"epsilon", 1e-8}, {"weight_decay", 0.0}, {"decoupled", false}};
  const auto out = RunAll("adam_update", attrs, {p, g, zeros, zeros, step});
  // Bias correction makes the first step lr * g / |g|.
  EXPECT_NEAR(out[0].GetDouble(0), 1 - 0.01, 1e-6);
  EXPECT_NEAR(out[0].GetDouble(1), -2 + 0.01, 1e-6);
  EXPECT_NEAR(out[1].GetDouble(1), 0.1 * -3, 1e-6);
  EXPECT_NEAR(out[2].GetDouble(1), 0.001 * 9, 1e-6);
  // AdamW decays the weights apart from the gradient.
  Attrs w = attrs;
  w.Set("weight_decay", 0.5);
  w.Set("decoupled", true);
  EXPECT_NEAR(RunAll("adam_update", w, {p, g, zeros, zeros, step})[0].GetDouble(0),
              1 - 0.01 - 0.01 * 0.5, 1e-6);
  EXPECT_EQ(RunOp("step_increment", {}, {Make({}, {4})}).GetDouble(0), 5.0);
  EXPECT_THROW(Infer("adam_update", attrs, {F32({2}), F32({2}), F32({2}), F32({2}), F32({3})}),
               ShapeError);
}

}  // namespace
}  // namespace twinflow::ops
