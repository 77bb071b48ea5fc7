#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/error.h"
#include "engine/graph/graph_builder.h"
#include "engine/ops/builtin_ops.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tests/support/op_runner.h"

namespace twinflow {
namespace {

using graph::OpContext;
using graph::TensorMeta;

const graph::OpRegistry& Ops() {
  static const graph::OpRegistry registry = ops::BuiltinOps();
  return registry;
}

const kernels::KernelRegistry& Kernels() {
  static const kernels::KernelRegistry registry = kernels::CpuKernels();
  return registry;
}

std::vector<TensorMeta> Infer(const std::string& type, const Attrs& attrs,
                              std::vector<TensorMeta> inputs) {
  return Ops().Find(type).infer(OpContext{type, attrs, inputs});
}

std::vector<std::string> Signatures(const std::string& type, const Attrs& attrs,
                                    std::vector<TensorMeta> inputs) {
  std::vector<std::string> texts;
  for (const auto& s : Ops().Find(type).signatures(OpContext{type, attrs, inputs}, 2)) {
    texts.push_back(s.ToString());
  }
  return texts;
}

Tensor Make(Shape shape, std::vector<double> values, DType dtype = DType::kF32) {
  Tensor t(std::move(shape), dtype);
  for (size_t i = 0; i < values.size(); ++i) t.SetDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

// Runs the op on whole tensors, output shape and dtype from the op's inference.
Tensor RunOp(const std::string& type, const Attrs& attrs, const std::vector<Tensor>& inputs) {
  testing::OpInstance instance{type, attrs, {}, {}, {}};
  for (const Tensor& t : inputs) instance.inputs.push_back({t.shape(), t.dtype()});
  return testing::OpRunner{Ops(), Kernels()}.RunSingle(instance, inputs)[0];
}

const TensorMeta F32(Shape shape) { return {std::move(shape), DType::kF32}; }

TEST(ElementwiseOps, BroadcastsNumpyStyle) {
  EXPECT_EQ(Infer("add", {}, {F32({3, 1, 4}), F32({5, 4})})[0].shape, (Shape{3, 5, 4}));
  EXPECT_EQ(Infer("mul", {}, {F32({}), F32({2, 3})})[0].shape, (Shape{2, 3}));
  EXPECT_THROW(Infer("sub", {}, {F32({3, 2}), F32({4})}), ShapeError);
  EXPECT_THROW(Infer("add", {}, {F32({3}), {Shape{3}, DType::kI32}}), InvalidArgumentError);
  EXPECT_THROW(Infer("div", {}, {{Shape{3}, DType::kI32}, {Shape{3}, DType::kI32}}),
               InvalidArgumentError);
  EXPECT_THROW(Infer("add", {}, {F32({3})}), InvalidArgumentError);
  EXPECT_THROW(Infer("bias_add", {}, {F32({2, 3}), F32({2})}), ShapeError);
  EXPECT_THROW(Infer("bias_add", {{"axis", int64_t{2}}}, {F32({2, 3}), F32({3})}),
               InvalidArgumentError);
  EXPECT_THROW(Infer("cast", {{"dtype", std::string("f33")}}, {F32({2})}), InvalidArgumentError);
  EXPECT_THROW(Infer("scalar_mul", {}, {F32({2})}), InvalidArgumentError);
  EXPECT_THROW(Infer("reduce_sum_like", {}, {F32({2, 3}), F32({2})}), ShapeError);
  try {
    Infer("sub", {}, {F32({3, 2}), F32({4})});
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("sub: shapes [3,2] and [4]"), std::string::npos);
  }
}

TEST(ElementwiseOps, BinaryKernelsBroadcast) {
  const Tensor a = Make({2, 1}, {1, 2});
  const Tensor b = Make({3}, {10, 20, 40});
  EXPECT_TRUE(BitEqual(RunOp("add", {}, {a, b}), Make({2, 3}, {11, 21, 41, 12, 22, 42})));
  EXPECT_TRUE(BitEqual(RunOp("sub", {}, {a, b}), Make({2, 3}, {-9, -19, -39, -8, -18, -38})));
  EXPECT_TRUE(BitEqual(RunOp("mul", {}, {b, a}), Make({2, 3}, {10, 20, 40, 20, 40, 80})));
  EXPECT_TRUE(BitEqual(RunOp("div", {}, {b, a}), Make({2, 3}, {10, 20, 40, 5, 10, 20})));
  // Integer arithmetic wraps instead of being undefined.
  const Tensor big = Make({1}, {std::numeric_limits<int32_t>::max()}, DType::kI32);
  const Tensor one = Make({1}, {1}, DType::kI32);
  EXPECT_EQ(RunOp("add", {}, {big, one}).GetDouble(0), std::numeric_limits<int32_t>::min());
}

TEST(ElementwiseOps, BiasAddAndItsGradient) {
  const Tensor x = Make({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(BitEqual(RunOp("bias_add", {{"axis", int64_t{0}}}, {x, Make({2}, {10, 20})}),
                       Make({2, 3}, {11, 12, 13, 24, 25, 26})));
  EXPECT_TRUE(BitEqual(RunOp("bias_add", {}, {x, Make({3}, {1, 0, -1})}),
                       Make({2, 3}, {2, 2, 2, 5, 5, 5})));
  EXPECT_TRUE(BitEqual(RunOp("bias_add_grad", {{"axis", int64_t{-1}}}, {x}), Make({3}, {5, 7, 9})));
  EXPECT_TRUE(BitEqual(RunOp("bias_add_grad", {{"axis", int64_t{0}}}, {x}), Make({2}, {6, 15})));
}

TEST(ElementwiseOps, ReduceSumLikeAndBroadcastLike) {
  const Tensor dy = Make({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(
      BitEqual(RunOp("reduce_sum_like", {}, {dy, Make({3}, {0, 0, 0})}), Make({3}, {5, 7, 9})));
  EXPECT_TRUE(
      BitEqual(RunOp("reduce_sum_like", {}, {dy, Make({2, 1}, {0, 0})}), Make({2, 1}, {6, 15})));
  EXPECT_TRUE(BitEqual(RunOp("reduce_sum_like", {}, {dy, Make({}, {0})}), Make({}, {21})));
  EXPECT_TRUE(BitEqual(RunOp("broadcast_like", {}, {Make({2, 1}, {1, 2}), dy}),
                       Make({2, 3}, {1, 1, 1, 2, 2, 2})));
}

TEST(ElementwiseOps, ScalarOpsAndCasts) {
  const Tensor x = Make({3}, {-1.5, 0.5, 2});
  EXPECT_TRUE(BitEqual(RunOp("scalar_add", {{"value", 1.0}}, {x}), Make({3}, {-0.5, 1.5, 3})));
  EXPECT_TRUE(BitEqual(RunOp("scalar_mul", {{"value", -2.0}}, {x}), Make({3}, {3, -1, -4})));
  EXPECT_TRUE(BitEqual(RunOp("scalar_pow", {{"exponent", 2.0}}, {x}), Make({3}, {2.25, 0.25, 4})));
  EXPECT_TRUE(BitEqual(RunOp("identity", {}, {x}), x));
  const Tensor odd = Make({4}, {-1.5, 2.7, 1e20, std::nan("")});
  EXPECT_TRUE(BitEqual(RunOp("cast", {{"dtype", std::string("i32")}}, {odd}),
                       Make({4}, {-1, 2, std::numeric_limits<int32_t>::max(), 0}, DType::kI32)));
  const Tensor wide = Make({1}, {double(int64_t{1} << 32) + 5}, DType::kI64);
  EXPECT_EQ(RunOp("cast", {{"dtype", std::string("i32")}}, {wide}).GetDouble(0), 5);
  EXPECT_TRUE(BitEqual(RunOp("cast", {{"dtype", std::string("f64")}}, {x}),
                       Make({3}, {-1.5, 0.5, 2}, DType::kF64)));
  EXPECT_EQ(RunOp("cast", {{"dtype", std::string("bf16")}}, {x}).GetDouble(2), 2.0);
}

TEST(ElementwiseOps, ListsSignaturesForABroadcastAdd) {
  EXPECT_EQ(
      Signatures("add", {}, {F32({3, 1, 4}), F32({5, 4})}),
      (std::vector<std::string>{"S(0),B -> S(0)", "B,S(0) -> S(1)", "S(2),S(1) -> S(2)", "B,B -> B",
                                "P,P -> P", "P(max),B -> P(max)", "B,P(max) -> P(max)",
                                "P(min),B -> P(min)", "B,P(min) -> P(min)"}));
  const auto mul = Signatures("mul", {}, {F32({4}), F32({4})});
  EXPECT_EQ(mul,
            (std::vector<std::string>{"S(0),S(0) -> S(0)", "B,B -> B", "P,B -> P", "B,P -> P"}));
  EXPECT_EQ(Signatures("div", {}, {F32({4}), F32({4})}).back(), "P,B -> P");
  EXPECT_EQ(Signatures("bias_add", {{"axis", int64_t{1}}}, {F32({2, 3}), F32({3})})[1],
            "S(1),S(0) -> S(1)");
  EXPECT_EQ(Signatures("reduce_sum_like", {}, {F32({2, 3}), F32({3})}),
            (std::vector<std::string>{"S(0),B -> P", "S(1),S(0) -> S(0)", "P,B -> P", "B,B -> B",
                                      "P,P -> P", "B,P -> B"}));
  // scalar_add is not linear; casting a partial sum to an integer truncates each part.
  for (const auto& s : Signatures("scalar_add", {{"value", 1.0}}, {F32({4})})) {
    EXPECT_NE(s, "P -> P");
  }
  for (const auto& s : Signatures("cast", {{"dtype", std::string("i32")}}, {F32({4})})) {
    EXPECT_NE(s, "P -> P");
  }
}

// The shared cases are float-only (the gradient check needs float outputs), so the integer
// kernels and the integer-specific rules are checked here the same way the property test does.
TEST(ElementwiseOps, IntegerInstancesHonourEverySignature) {
  const testing::OpRunner runner{Ops(), Kernels()};
  const TensorMeta i32{Shape{5, 3}, DType::kI32};
  const TensorMeta i64{Shape{3}, DType::kI64};
  const auto inst = [](std::string type, Attrs attrs, std::vector<TensorMeta> inputs) {
    return testing::OpInstance{std::move(type), std::move(attrs), std::move(inputs), {}, {}};
  };
  const std::vector<testing::OpInstance> instances = {
      inst("add", {}, {i32, {Shape{1, 3}, DType::kI32}}),
      inst("sub", {}, {{Shape{3}, DType::kI64}, {Shape{4, 1}, DType::kI64}}),
      inst("mul", {}, {i32, i32}),
      inst("bias_add", {{"axis", int64_t{0}}}, {i32, {Shape{5}, DType::kI32}}),
      inst("bias_add_grad", {{"axis", int64_t{1}}}, {i32}),
      inst("reduce_sum_like", {}, {i32, {Shape{5, 1}, DType::kI32}}),
      inst("broadcast_like", {}, {i64, {Shape{2, 3}, DType::kI64}}),
      inst("scalar_mul", {{"value", 3.0}}, {i32}),
      inst("scalar_mul", {{"value", -0.5}}, {i32}),
      inst("scalar_add", {{"value", 2.5}}, {i64}),
      inst("identity", {}, {{Shape{5, 3}, DType::kBF16}}),
      inst("cast", {{"dtype", std::string("i32")}}, {F32({5, 3})}),
      inst("cast", {{"dtype", std::string("i64")}}, {i32}),
      inst("cast", {{"dtype", std::string("i32")}}, {i64}),
      inst("cast", {{"dtype", std::string("bf16")}}, {F32({5, 3})}),
      inst("cast", {{"dtype", std::string("f32")}}, {{Shape{5, 3}, DType::kBF16}}),
      inst("cast", {{"dtype", std::string("f64")}}, {i64}),
  };
  Rng rng(11);
  for (const auto& instance : instances) {
    for (const Shape& mesh : {Shape{2}, Shape{3}, Shape{2, 2}}) {
      std::vector<int64_t> ids(mesh.numel());
      for (int64_t d = 0; d < mesh.numel(); ++d) ids[d] = d;
      const sbp::Placement placement(DeviceType::kCpu, ids, mesh);
      const OpContext ctx{instance.type, instance.attrs, instance.inputs};
      for (int trial = 0; trial < 3; ++trial) {
        std::vector<Tensor> inputs;
        for (const auto& meta : instance.inputs) {
          // Casts of floats to integers must see fractions and out-of-range values.
          Tensor t = Tensor::Random(meta.shape, meta.dtype, rng);
          if (IsFloating(meta.dtype)) {
            for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, t.GetDouble(i) * 1e3);
          }
          inputs.push_back(std::move(t));
        }
        const auto want = runner.RunSingle(instance, inputs);
        for (const auto& sig : graph::NdSignatures(Ops().Find(instance.type), ctx, mesh)) {
          const auto got = runner.RunDistributed(instance, inputs, sig, placement, rng);
          EXPECT_EQ(testing::CompareOutputs(got, want, mesh.numel()), "")
              << instance.type << " " << instance.attrs.ToString() << " "
              << instance.inputs[0].ToString() << " under " << sig.ToString();
        }
      }
    }
  }
}

TEST(ElementwiseOps, GradientsReduceBackToInputShapes) {
  for (const std::string type : {"add", "sub", "mul", "div"}) {
    graph::GraphBuilder builder(Ops(), sbp::Placement(DeviceType::kCpu, {0}));
    const auto a = builder.Input("a", Shape{3, 1, 4});
    const auto b = builder.Input("b", Shape{5, 4});
    const auto y = builder.Add1(type, {a, b});
    const auto dy = builder.Input("dy", builder.meta(y).shape);
    const graph::OpNode node = builder.graph().op(builder.graph().tensor(y).producer);
    const auto grads = Ops().Find(type).gradient(builder, node, {dy});
    EXPECT_EQ(builder.meta(*grads[0]).shape, (Shape{3, 1, 4})) << type;
    EXPECT_EQ(builder.meta(*grads[1]).shape, (Shape{5, 4})) << type;
  }
  graph::GraphBuilder builder(Ops(), sbp::Placement(DeviceType::kCpu, {0}));
  const auto x = builder.Input("x", Shape{2, 3, 4});
  const auto bias = builder.Input("bias", Shape{3});
  const auto y = builder.Add1("bias_add", {x, bias}, {{"axis", int64_t{1}}});
  const graph::OpNode node = builder.graph().op(builder.graph().tensor(y).producer);
  const auto grads = Ops().Find("bias_add").gradient(builder, node, {y});
  EXPECT_EQ(builder.meta(*grads[1]).shape, (Shape{3}));
  const auto i = builder.Input("i", Shape{2}, DType::kI32);
  const auto c = builder.Add1("cast", {i}, {{"dtype", std::string("f32")}});
  const graph::OpNode cast = builder.graph().op(builder.graph().tensor(c).producer);
  EXPECT_FALSE(Ops().Find("cast").gradient(builder, cast, {c})[0].has_value());
}

}  // namespace
}  // namespace twinflow
